// The runtime under load (issue 9): a 50-layer MLP traced on every step for thousands of steps.
// Prints what test/runtime/test_load.cpp cannot assert without timing: the nanny's memory (peak
// RSS and heap growth over a run without it), the time the training thread spends handing a
// record to the writer (p50 / p99 / max of the enqueue behind record_scalar, under the real
// writer's load), the step time with and without the nanny, and the threads left after close().
// Then the writer alone: one thread enqueueing tensor records as fast as it can.
//   Run: build/bench/mpnanny_bench_load [steps (default 3000)] [layers (default 50)]
// This program prints; it asserts nothing.
#include <malloc.h>
#include <sqlite3.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mpnanny/MetricsWriter.h"
#include "mpnanny/Nanny.h"

namespace {

using Clock = std::chrono::steady_clock;

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

int64_t heap_bytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
}

int thread_count() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

int64_t query_number(const std::string& database, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_stmt* statement = nullptr;
  int64_t value = -1;
  if (sqlite3_open_v2(database.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK && sqlite3_step(statement) == SQLITE_ROW) {
    value = sqlite3_column_int64(statement, 0);
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

struct DeepMlp : torch::nn::Module {
  explicit DeepMlp(int layers) {
    for (int i = 0; i < layers; ++i) {
      stack->push_back(torch::nn::Linear(64, 64));
      stack->push_back(torch::nn::Tanh());
    }
    register_module("stack", stack);
  }
  torch::nn::Sequential stack;
};

void print_times(const char* what, const std::vector<double>& seconds) {
  std::printf("%-34s p50 %9.2f us   p99 %9.2f us   max %9.2f us   (%zu samples)\n", what,
              1e6 * percentile(seconds, 0.5), 1e6 * percentile(seconds, 0.99),
              1e6 * percentile(seconds, 1.0), seconds.size());
}

void bench_dense_training(int steps, int layers, const std::filesystem::path& directory) {
  std::printf("dense tracing of a %d-layer MLP (%d parameter tensors), %d steps\n", layers, 2 * layers, steps);
  torch::manual_seed(0);
  auto model = std::make_shared<DeepMlp>(layers);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(1e-3));
  const torch::Tensor x = torch::randn({32, 64}), y = torch::randn({32, 64});
  const auto train_step = [&] {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->stack->forward(x), y);
    loss.backward();
    optimizer.step();
    return loss.item<double>();
  };
  std::vector<double> plain_steps;
  for (int step = 0; step < std::min(steps, 500); ++step) {
    const auto start = Clock::now();
    train_step();
    plain_steps.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const int threads_before = thread_count();
  const int64_t rss_before = resident_bytes(), heap_before = heap_bytes();

  mpnanny::Options options;
  options.output_dir = directory.string();
  options.trace_interval = 1;
  options.verbosity = 0;
  std::vector<double> nanny_steps, enqueues;
  nanny_steps.reserve(steps);
  enqueues.reserve(8 * static_cast<size_t>(steps));
  int64_t rss_peak = rss_before, heap_peak = heap_before;
  int threads_during = 0;
  int64_t rows = 0, dropped = 0;
  {
    mpnanny::Nanny nanny(model, options);
    threads_during = thread_count();
    for (int step = 0; step < steps; ++step) {
      const auto start = Clock::now();
      {
        auto guard = nanny.step(step);
        const double loss = train_step();
        // record_scalar is one enqueue: timing it times the training thread's hand-off to the
        // writer while the writer commits the previous steps' records.
        for (int i = 0; i < 8; ++i) {
          const auto enqueue_start = Clock::now();
          nanny.record_scalar("loss", loss);
          enqueues.push_back(std::chrono::duration<double>(Clock::now() - enqueue_start).count());
        }
      }
      nanny_steps.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      if (step % 10 == 0) {
        rss_peak = std::max(rss_peak, resident_bytes());
        heap_peak = std::max(heap_peak, heap_bytes());
      }
    }
    nanny.close();
    rows = query_number(nanny.database_path(), "SELECT count(*) FROM tensor_stats");
    dropped = query_number(nanny.database_path(), "SELECT dropped_records FROM runs");
  }
  const int threads_after = thread_count();
  print_times("training step without the nanny", plain_steps);
  print_times("training step, dense nanny", nanny_steps);
  print_times("enqueue (record_scalar)", enqueues);
  std::printf("%-34s %lld rows written, %lld records dropped\n", "tensor_stats", static_cast<long long>(rows),
              static_cast<long long>(dropped));
  std::printf("%-34s %+.1f MiB peak RSS, %+.1f MiB peak heap over the run without it\n", "memory of the nanny",
              (rss_peak - rss_before) / 1048576.0, (heap_peak - heap_before) / 1048576.0);
  std::printf("%-34s before %d, with the nanny %d, after close() %d\n", "threads", threads_before, threads_during,
              threads_after);
}

void bench_writer_alone(const std::filesystem::path& directory) {
  constexpr int kRecords = 400000;
  std::printf("\nthe writer alone: one thread enqueues %d tensor records as fast as it can\n", kRecords);
  mpnanny::MetricsWriter writer((directory / "writer.db").string(), mpnanny::RunInfo{0, 0, 1, mpnanny::to_string(mpnanny::Precision::FP16), "{}", ""});
  mpnanny::TensorRecord record;
  record.op = "aten::addmm";
  record.dtype = "Float";
  record.shape = "[32, 64]";
  record.stats.numel = 2048;
  std::vector<double> enqueues;
  enqueues.reserve(kRecords);
  int accepted = 0;
  const int64_t rss_before = resident_bytes();
  int64_t rss_peak = rss_before;
  for (int i = 0; i < kRecords; ++i) {
    record.step = i / 400;
    record.seq = i % 400;
    const auto start = Clock::now();
    accepted += writer.enqueue(record);
    enqueues.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (i % 1000 == 0) rss_peak = std::max(rss_peak, resident_bytes());
  }
  writer.close();
  print_times("enqueue (MetricsWriter::enqueue)", enqueues);
  std::printf("%-34s %d accepted, %lld dropped (queue capacity %zu)\n", "records", accepted,
              static_cast<long long>(writer.dropped_records()), mpnanny::WriterOptions{}.queue_capacity);
  std::printf("%-34s %+.1f MiB peak RSS\n", "memory of the writer", (rss_peak - rss_before) / 1048576.0);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 3000;
  const int layers = argc > 2 ? std::atoi(argv[2]) : 50;
  const auto directory = std::filesystem::temp_directory_path() / "mpnanny-bench-load";
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  bench_dense_training(steps, layers, directory);
  bench_writer_alone(directory);
  std::filesystem::remove_all(directory);
  return 0;
}
