// The runtime under load: a deep MLP (many parameters, hundreds of records a step) traced on
// every step. Only bounded and structural properties are asserted here; the figures (peak
// memory, p99 enqueue time) are measured by bench/bench_load.cpp.
#include <gtest/gtest.h>
#include <malloc.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <thread>

#include "TestSupport.h"
#include "mpnanny/MetricsWriter.h"
#include "mpnanny/Nanny.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// From the sanitizer runtimes (both ASan's and TSan's); GCC ships no header that declares it.
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#define MPNANNY_SANITIZER_HEAP 1
#endif

namespace mpnanny {
namespace {

using test::query_value;
using test::ScratchDir;

/// Bytes the process holds on the heap now. Not RSS: RSS keeps pages the allocator has freed but
/// not returned, and counts LibTorch's thread stacks; what would grow with a leak is this.
int64_t heap_in_use() {
#ifdef MPNANNY_SANITIZER_HEAP
  // The sanitizers replace malloc; glibc's counters no longer see the heap.
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.uordblks + info.hblkhd);
#endif
}

int thread_count() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

struct DeepMlp : torch::nn::Module {
  explicit DeepMlp(int layers) {
    for (int i = 0; i < layers; ++i) {
      stack->push_back(torch::nn::Linear(16, 16));
      stack->push_back(torch::nn::Tanh());
    }
    register_module("stack", stack);
  }
  torch::nn::Sequential stack;
};

/// What one dense run of a 50-layer MLP left behind.
struct LoadRun {
  int64_t rows = 0;                   ///< tensor_stats rows written
  int64_t rows_after_warm_up = 0;     ///< of which after the warm-up
  int64_t heap_growth = 0;            ///< heap in use at the end minus after the warm-up, queue drained
};

constexpr int kWarmSteps = 40, kSteps = 240;

LoadRun run_dense_load() {
  ScratchDir dir;
  torch::manual_seed(3);
  auto model = std::make_shared<DeepMlp>(50);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(1e-3));
  const torch::Tensor x = torch::randn({8, 16}), y = torch::randn({8, 16});
  const auto train_step = [&] {
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model->stack->forward(x), y);
    loss.backward();
    optimizer.step();
    return loss.item<double>();
  };
  train_step();  // LibTorch starts its own threads on first use; they are not the nanny's
  // So does TSan (a background thread at the first thread the program creates).
  std::thread([] {}).join();
  const int threads_before = thread_count();

  LoadRun run;
  int64_t heap_after_warm_up = 0;
  {
    Options options;
    options.output_dir = dir.path();
    options.trace_interval = 1;
    options.verbosity = 0;
    Nanny nanny(model, options);
    EXPECT_EQ(thread_count(), threads_before + 1) << "the nanny runs one thread, its writer";
    for (int step = 0; step < kSteps; ++step) {
      {
        auto guard = nanny.step(step);
        nanny.record_scalar("loss", train_step());
      }
      // Measured with the queue drained, so that only what the nanny keeps between steps counts.
      if (step == kWarmSteps) {
        nanny.flush();
        heap_after_warm_up = heap_in_use();
      }
    }
    nanny.flush();
    run.heap_growth = heap_in_use() - heap_after_warm_up;
    std::printf("[ figures  ] %zu alerts raised\n", nanny.alerts().size());
    EXPECT_TRUE(nanny.active());
    nanny.close();
    EXPECT_EQ(thread_count(), threads_before) << "close() left a thread running";

    const std::string database = nanny.database_path();
    EXPECT_EQ(query_value(database, "SELECT count(DISTINCT step) FROM tensor_stats"), std::to_string(kSteps));
    run.rows = std::stoll(query_value(database, "SELECT count(*) FROM tensor_stats"));
    run.rows_after_warm_up = run.rows * (kSteps - kWarmSteps) / kSteps;
    // Each step observes the 100 parameters twice (gradient, weight) and the forward and backward
    // ops of 50 layers: the load the test is meant to have.
    EXPECT_GE(run.rows, kSteps * 300);
    EXPECT_EQ(query_value(database, "SELECT dropped_records FROM runs"), "0");
  }
  EXPECT_EQ(thread_count(), threads_before);
  std::printf("[ figures  ] %lld tensor rows; heap growth from step %d to step %d: %lld bytes\n",
              static_cast<long long>(run.rows), kWarmSteps, kSteps, static_cast<long long>(run.heap_growth));
  return run;
}

TEST(Load, DenseTracingOfADeepMlpDropsNothingAndLeavesNoThread) { run_dense_load(); }

// Bounded: after the warm-up (caches of sites and parameters filled) the heap must not grow with
// the data written; keeping a twentieth of each record would exceed this bound. This model's
// deep layers raise GRAD_VANISH on every step (about 47 alerts a step): kept all in memory, they
// grew the heap by 19 KB a step, which this test found.
TEST(Load, DenseTracingKeepsTheHeapBounded) {
  const LoadRun run = run_dense_load();
  EXPECT_LT(run.heap_growth, run.rows_after_warm_up * static_cast<int64_t>(sizeof(TensorRecord)) / 20)
      << "heap grew by " << run.heap_growth << " bytes over " << run.rows_after_warm_up << " records";
}

}  // namespace
}  // namespace mpnanny
