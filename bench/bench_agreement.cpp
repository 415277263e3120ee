// The agreement all-reduce alone (issue 28): RankAgreement::exchange between ranks that are
// threads of this process, in one Gloo group over an in-memory store on the loopback address,
// as test/runtime/test_data_parallel.cpp builds it. Prints the median time of one exchange,
// which a run pays once per traced step (every `trace_interval` steps): bench/ddp-bench.py
// divides it by the interval and sets it beside the measured step time. Not a test.
//
//   build/bench/mpnanny_bench_agreement [--ranks N] [--exchanges K] [--rounds R]
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "../runtime/src/RankAgreement.h"
#include "gloo_group.h"

namespace {

/// Each rank's median microseconds per exchange over `rounds` rounds of `exchanges`; the
/// slowest rank's, since every rank waits for the last.
double median_exchange_us(int ranks, int exchanges, int rounds) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::vector<double>> per_rank(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      auto options = c10d::ProcessGroupGloo::Options::create();
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      mpnanny::RankAgreement agreement(gloo_group(store, rank, ranks, options));
      mpnanny::RankReport mine;
      mine.loss_scale = 65536.0;
      for (int warm = 0; warm < 20; ++warm) agreement.exchange(mine);
      for (int round = 0; round < rounds; ++round) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < exchanges; ++i) agreement.exchange(mine);
        const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
        per_rank[static_cast<size_t>(rank)].push_back(took.count() / exchanges);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  double slowest = 0;
  for (auto& times : per_rank) {
    std::sort(times.begin(), times.end());
    slowest = std::max(slowest, times[times.size() / 2]);
  }
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, exchanges = 200, rounds = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--ranks") ranks = value;
    else if (flag == "--exchanges") exchanges = value;
    else if (flag == "--rounds") rounds = value;
    else {
      std::cerr << "usage: " << argv[0] << " [--ranks N] [--exchanges K] [--rounds R]\n";
      return 2;
    }
  }
  if (ranks < 1 || exchanges < 1 || rounds < 1) {
    std::cerr << argv[0] << ": --ranks, --exchanges and --rounds must be at least 1\n";
    return 2;
  }
  std::cout << "agreement exchange: " << median_exchange_us(ranks, exchanges, rounds) << " us (median, " << ranks
            << " ranks, " << rounds << " rounds of " << exchanges << ")\n";
  return 0;
}
