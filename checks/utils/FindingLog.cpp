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
std::vector<ParseSummary> &summaries() {
  thread_local std::vector<ParseSummary> S;
  return S;
}
std::vector<std::string> &facts() {
  thread_local std::vector<std::string> F;
  return F;
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

void FindingLog::recordParse(ParseSummary Summary) {
  std::lock_guard<std::mutex> G(lock());
  summaries().push_back(std::move(Summary));
}

std::vector<ParseSummary> FindingLog::takeParse() {
  std::lock_guard<std::mutex> G(lock());
  std::vector<ParseSummary> Out;
  Out.swap(summaries());
  return Out;
}

void FindingLog::recordFacts(std::string Json) {
  std::lock_guard<std::mutex> G(lock());
  facts().push_back(std::move(Json));
}

std::vector<std::string> FindingLog::takeFacts() {
  std::lock_guard<std::mutex> G(lock());
  std::vector<std::string> Out;
  Out.swap(facts());
  return Out;
}

} // namespace mpnanny
