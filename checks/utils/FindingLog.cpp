//===--- FindingLog.cpp - mpnanny ------------------------------------------===//
#include "FindingLog.h"

#include <mutex>

namespace mpnanny {

namespace {
std::mutex &lock() {
  static std::mutex M;
  return M;
}
// Per thread: mpnanny-check scans files on several threads, each taking the
// details of the file it just scanned (the checks run on the scanning thread).
std::vector<FindingDetail> &entries() {
  thread_local std::vector<FindingDetail> E;
  return E;
}
} // namespace

void FindingLog::record(FindingDetail Detail) {
  std::lock_guard<std::mutex> G(lock());
  entries().push_back(std::move(Detail));
}

std::vector<FindingDetail> FindingLog::take() {
  std::lock_guard<std::mutex> G(lock());
  std::vector<FindingDetail> Out;
  Out.swap(entries());
  return Out;
}

} // namespace mpnanny
