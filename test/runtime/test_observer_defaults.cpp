// What the observer watches by default (generated from the knowledge base) and how it samples
// memory, tested through their effects: a KB op in a training step lands in the database.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "../../runtime/src/MemoryStats.h"
#include "TestSupport.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

bool watched(const std::string& op) {
  const auto& ops = default_watched_ops();
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

TEST(WatchedOps, ComeFromTheKnowledgeBase) {
  // logsumexp and cosh were never in a hand-written list: only the KB (rules/ops-*.yaml) names them.
  EXPECT_TRUE(watched("aten::logsumexp"));
  EXPECT_TRUE(watched("aten::cosh"));
  EXPECT_TRUE(watched("aten::softmax"));
  EXPECT_TRUE(watched("aten::masked_fill"));  // takes a literal the format must hold
  EXPECT_TRUE(watched("aten::linear"));       // autocast lowers it: a matmul feeding the risky ops
  // The runtime's own additions, which the KB does not name.
  EXPECT_TRUE(watched("aten::native_layer_norm"));
  EXPECT_TRUE(watched("aten::mean"));
  // Backward kernels are not: the backward pass is observed through the forward ops' autograd
  // nodes, with the op callback off.
  EXPECT_FALSE(watched("aten::pow_backward"));
  // KB ops with no risk and no autocast treatment are not worth a traced step's time.
  EXPECT_FALSE(watched("aten::add"));
  EXPECT_FALSE(watched("aten::relu"));
}

struct LogSumExpModel : torch::nn::Module {
  LogSumExpModel() : fc(register_module("fc", torch::nn::Linear(8, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) { return torch::logsumexp(fc(x), 1); }
  torch::nn::Linear fc;
};

TEST(WatchedOps, AKnowledgeBaseOpIsObservedInTraining) {
  test::ScratchDir dir;
  auto model = std::make_shared<LogSumExpModel>();
  Options options;
  options.output_dir = dir.path();
  options.verbosity = 0;
  {
    Nanny nanny(model, options);
    auto guard = nanny.step(0);
    model->forward(torch::randn({16, 8})).sum().backward();
  }
  EXPECT_EQ(test::query_value(dir.file("metrics.db"),
                              "SELECT COUNT(*) FROM tensor_stats WHERE op = 'aten::logsumexp' AND phase = 'forward'"),
            "1");
}

TEST(MemoryStats, ResidentSetFollowsTouchedMemory) {
  const int64_t before = sample_memory().rss_bytes;
  ASSERT_GT(before, 0);
  constexpr size_t kBytes = size_t{64} << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);  // resident only once written
  const MemorySample after = sample_memory();
  EXPECT_GE(after.rss_bytes - before, static_cast<int64_t>(kBytes / 2));
  EXPECT_EQ(block[kBytes - 1], 1);
}

TEST(MemoryStats, CudaFieldsAreUnmeasuredWithoutACudaAllocator) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is present: tools/gpu-check.sh covers it";
  const MemorySample sample = sample_memory();
  EXPECT_EQ(sample.cuda_allocated_bytes, -1);
  EXPECT_EQ(sample.cuda_reserved_bytes, -1);
  EXPECT_EQ(sample.cuda_allocated_peak_bytes, -1);
  EXPECT_EQ(sample.cuda_alloc_retries, -1);
}

TEST(MemoryStats, TracedStepsRecordTheResidentSet) {
  test::ScratchDir dir;
  auto model = std::make_shared<LogSumExpModel>();
  Options options;
  options.output_dir = dir.path();
  options.verbosity = 0;
  {
    Nanny nanny(model, options);
    auto guard = nanny.step(0);
    model->forward(torch::randn({4, 8})).sum().backward();
  }
  EXPECT_EQ(test::query_value(dir.file("metrics.db"), "SELECT rss_bytes > 0 FROM memory WHERE step = 0"), "1");
}

}  // namespace
}  // namespace mpnanny
