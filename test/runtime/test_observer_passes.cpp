// How the op observer follows a traced step's passes: the RecordFunction callback is on for
// forward passes and off for backward passes, which are observed through post hooks on the
// autograd nodes of the watched forward ops; inner ops of a watched op are hidden from
// RecordFunction while it runs, except from thread-local callbacks (the profiler's).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <string>

#include "TestSupport.h"
#include "TracedEveryStep.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

using test::query_value;
using test::ScratchDir;
using test::traced_every_step;

struct TwoLayers : torch::nn::Module {
  TwoLayers()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))), fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::nn::Linear fc1, fc2;
};

std::string rows(const std::string& db, const std::string& where) {
  return query_value(db, "SELECT count(*) FROM tensor_stats t JOIN locations l USING(run_id, location_id) WHERE " +
                             where + " AND l.file LIKE '%test_observer_passes.cpp'");
}

bool op_callbacks_active() { return at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION).has_value(); }

TEST(ObserverPasses, EveryForwardPassOfAnAccumulatingStepIsObservedAndNoBackwardPassRunsTheCallback) {
  ScratchDir dir;
  torch::manual_seed(3);
  auto net = std::make_shared<TwoLayers>();
  int softmax_line = 0;
  int backward_hooks = 0, backward_hooks_with_callback = 0;
  {
    Nanny nanny(net, traced_every_step(dir));
    auto guard = nanny.step(0);
    for (int micro_batch = 0; micro_batch < 3; ++micro_batch) {
      const auto x = torch::randn({32, 8});
      auto hidden = torch::relu(net->fc1(x));
      hidden.register_hook([&](const torch::Tensor& gradient) {
        ++backward_hooks;
        backward_hooks_with_callback += op_callbacks_active();
        return gradient;
      });
      auto p = torch::softmax(net->fc2(hidden), -1); softmax_line = __LINE__;
      EXPECT_TRUE(op_callbacks_active()) << "forward pass " << micro_batch << " is not observed";
      p.pow(2).sum().backward();
    }
  }
  EXPECT_EQ(backward_hooks, 3);
  EXPECT_EQ(backward_hooks_with_callback, 0) << "the op callback ran during a backward pass";
  EXPECT_FALSE(op_callbacks_active()) << "the callback outlived the traced step";
  const std::string db = dir.file("metrics.db");
  const std::string at_softmax = "t.op='aten::softmax' AND l.line=" + std::to_string(softmax_line);
  EXPECT_EQ(rows(db, "t.step=0 AND t.phase='forward' AND " + at_softmax), "3");
  EXPECT_EQ(rows(db, "t.step=0 AND t.phase='backward' AND " + at_softmax), "3");
}

TEST(ObserverPasses, ABackwardObservationIsTheGradientTheOpPassesToItsInput) {
  ScratchDir dir;
  torch::manual_seed(4);
  const auto x = (torch::randn({64, 10}) * 3).requires_grad_();
  torch::Tensor gradient_of_softmax_input;
  int softmax_line = 0;
  {
    Nanny nanny(traced_every_step(dir));
    auto guard = nanny.step(0);
    auto scaled = x * 2;
    scaled.register_hook([&](const torch::Tensor& gradient) { gradient_of_softmax_input = gradient.clone(); });
    auto p = torch::softmax(scaled, -1); softmax_line = __LINE__;
    (p * torch::arange(10).to(torch::kFloat)).sum().backward();
  }
  ASSERT_TRUE(gradient_of_softmax_input.defined());
  const auto stats = test::query(dir.file("metrics.db"),
                                 "SELECT t.numel, t.max_abs, t.shape FROM tensor_stats t JOIN locations l "
                                 "USING(run_id, location_id) WHERE t.phase='backward' AND t.op='aten::softmax' AND l.line=" +
                                     std::to_string(softmax_line));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0][0], "640");
  EXPECT_NEAR(std::stod(stats[0][1]), gradient_of_softmax_input.abs().max().item<double>(), 1e-6);
  EXPECT_EQ(stats[0][2], "[64,10]");
}

TEST(ObserverPasses, GradientsThatGoStraightToAParameterAreLeftToTheParameterPass) {
  ScratchDir dir;
  torch::manual_seed(5);
  auto norm = std::make_shared<torch::nn::LayerNormImpl>(torch::nn::LayerNormOptions({12}));
  const auto x = torch::randn({20, 12}).requires_grad_();
  int norm_line = 0;
  {
    Nanny nanny(norm, traced_every_step(dir));
    auto guard = nanny.step(0);
    auto y = norm->forward(x); norm_line = __LINE__;
    y.pow(2).sum().backward();
  }
  const std::string db = dir.file("metrics.db");
  // The layer norm's node passes gradients to x, the weight and the bias: only x's is the op's.
  EXPECT_EQ(rows(db, "t.phase='backward' AND l.line=" + std::to_string(norm_line)), "1");
  EXPECT_EQ(query_value(db, "SELECT t.shape FROM tensor_stats t JOIN locations l USING(run_id, location_id) "
                            "WHERE t.phase='backward' AND l.line=" + std::to_string(norm_line)),
            "[20,12]");
  EXPECT_EQ(query_value(db, "SELECT count(*) FROM tensor_stats WHERE phase='gradient'"), "2");
}

// at::linear transposes the weight before the watched addmm runs: the gradient addmm passes to
// that transpose is the weight's own gradient, rearranged, and the parameter pass records it.
TEST(ObserverPasses, GradientsThatReachAParameterThroughAViewAreLeftToTheParameterPass) {
  ScratchDir dir;
  torch::manual_seed(6);
  auto linear = std::make_shared<torch::nn::LinearImpl>(12, 6);
  const auto x = torch::randn({20, 12}).requires_grad_();
  const auto weight = torch::randn({6, 12}, torch::requires_grad());
  int linear_line = 0, reshaped_line = 0;
  {
    Nanny nanny(linear, traced_every_step(dir));
    auto guard = nanny.step(0);
    auto y = linear->forward(x); linear_line = __LINE__;
    // A tensor that is not a parameter keeps its row, even when it reaches backward through a view.
    auto z = torch::matmul(x, weight.t()); reshaped_line = __LINE__;
    (y.pow(2).sum() + z.sum()).backward();
  }
  const std::string db = dir.file("metrics.db");
  EXPECT_EQ(rows(db, "t.phase='backward' AND l.line=" + std::to_string(linear_line)), "1");
  EXPECT_EQ(query_value(db, "SELECT t.shape FROM tensor_stats t JOIN locations l USING(run_id, location_id) "
                            "WHERE t.phase='backward' AND l.line=" + std::to_string(linear_line)),
            "[20,12]");
  EXPECT_EQ(rows(db, "t.phase='backward' AND l.line=" + std::to_string(reshaped_line)), "2");
  EXPECT_EQ(query_value(db, "SELECT count(*) FROM tensor_stats WHERE phase='gradient'"), "2");
}

TEST(ObserverPasses, InnerOpsAreHiddenFromGlobalCallbacksOnlyWhileTheWatchedOpRuns) {
  ScratchDir dir;
  static std::atomic<int> inner_bmm{0}, outer_relu{0};
  inner_bmm = 0;  // statics: a repeated run starts from the last one's counts
  outer_relu = 0;
  const auto handle = at::addGlobalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        const std::string name = fn.name();
        if (name == "aten::bmm") ++inner_bmm;
        if (name == "aten::relu") ++outer_relu;
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION}));
  const auto a = torch::randn({4, 5, 6}, torch::requires_grad()), b = torch::randn({4, 6, 3});
  {
    Nanny nanny(traced_every_step(dir));
    auto guard = nanny.step(0);
    auto product = torch::matmul(a, b);  // watched; runs aten::bmm inside
    auto activated = torch::relu(product);
    EXPECT_TRUE(at::isRecordFunctionEnabled());
    EXPECT_EQ(inner_bmm.load(), 0) << "the bmm inside a watched matmul paid for a RecordFunction";
    EXPECT_GT(outer_relu.load(), 0) << "an op after the watched one was hidden too";
    activated.sum().backward();  // its backward node runs bmm, seen by this callback
  }
  // Outside traced steps nothing is hidden.
  inner_bmm = 0;
  torch::matmul(a.detach(), b);
  EXPECT_GT(inner_bmm.load(), 0);
  at::removeCallback(handle);
  EXPECT_EQ(rows(dir.file("metrics.db"), "t.phase='forward' AND t.op='aten::matmul'"), "1");
}

TEST(ObserverPasses, AThreadLocalCallbackLikeTheProfilersStillSeesTheInnerOps) {
  ScratchDir dir;
  static std::atomic<int> inner_bmm{0};
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
        if (std::string(fn.name()) == "aten::bmm") ++inner_bmm;
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION}));
  {
    Nanny nanny(traced_every_step(dir));
    auto guard = nanny.step(0);
    torch::matmul(torch::randn({4, 5, 6}, torch::requires_grad()), torch::randn({4, 6, 3})).sum().backward();
  }
  at::removeCallback(handle);
  EXPECT_GT(inner_bmm.load(), 0);
  EXPECT_EQ(rows(dir.file("metrics.db"), "t.phase='forward' AND t.op='aten::matmul'"), "1");
}

TEST(ObserverPasses, AWatchedOpThatThrowsLeavesRecordFunctionOnAndObservationGoingOn) {
  ScratchDir dir;
  int log_line = 0;
  {
    Nanny nanny(traced_every_step(dir));
    auto guard = nanny.step(0);
    EXPECT_THROW(torch::matmul(torch::randn({3, 4}), torch::randn({5, 6})), c10::Error);
    EXPECT_TRUE(at::isRecordFunctionEnabled());
    torch::log(torch::rand({8}, torch::requires_grad()) + 1); log_line = __LINE__;
  }
  EXPECT_EQ(rows(dir.file("metrics.db"), "t.phase='forward' AND t.op='aten::log' AND l.line=" + std::to_string(log_line)),
            "1");
}

}  // namespace
}  // namespace mpnanny
