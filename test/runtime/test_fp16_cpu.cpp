// The scenario families of test_scenarios.cpp that predict an fp16 failure from an fp32 run
// (overflow, underflow, NaN, swamping), run once more with the model and its data converted to
// fp16, which LibTorch 2.x computes on the CPU. Each asserts that both runs raise the same alert on
// the same op: what the headroom of fp32 values predicts is what fp16 values show. (Their lines are
// not compared: the scenarios run inside lambdas inlined into expect_agreement, whose own lines
// the locator reports.) What fp16 does next is fp16's own: an inf that reaches the optimizer
// leaves NaN in the weights, which only the fp16 run can report.
// LibTorch 1.13 has no fp16 matmul on the CPU ("addmm_impl_cpu_" not implemented for 'Half'):
// there every test here is skipped, saying so.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <filesystem>
#include <set>
#include <string>

#include "ScenarioSupport.h"
#include "TestSupport.h"
#include "TracedEveryStep.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

using test::OverflowNet;
using test::ScratchDir;
using test::traced_every_step;

#define SKIP_UNLESS_THE_CPU_COMPUTES_FP16()                                                                  \
  if (TORCH_VERSION_MAJOR < 2)                                                                               \
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " computes no fp16 matmul on the CPU ('addmm_impl_cpu_' " \
                  "not implemented for 'Half'): the fp32 run in test_scenarios.cpp predicts this failure "   \
                  "from headroom, and real fp16 runs on LibTorch 2.x (tools/debian13.sh) or a GPU"

/// "TYPE@op" for op alerts, "TYPE@parameter" for parameter alerts.
std::string describe(const Alert& alert) {
  return std::string(to_string(alert.type)) + "@" + (alert.name.empty() ? alert.op : alert.name);
}

/// A run's alerts on ops as a set, and all its alerts as text for a failing assertion.
struct Run {
  std::set<std::string> op_alerts;
  std::string listing;
  std::set<std::string> dtypes;  // of the observed forward outputs
};

Run summary(Nanny& nanny) {
  Run run;
  for (const Alert& alert : nanny.alerts()) {
    if (alert.name.empty()) run.op_alerts.insert(describe(alert));
    run.listing += "  step " + std::to_string(alert.step) + " " + describe(alert) + " at " +
                   std::filesystem::path(alert.location.file).filename().string() + ":" +
                   std::to_string(alert.location.line) + ": " + alert.message + "\n";
  }
  for (const auto& row : test::query(nanny.database_path(), "SELECT DISTINCT dtype FROM tensor_stats WHERE phase = 'forward'")) {
    if (!row.empty()) run.dtypes.insert(row[0]);
  }
  return run;
}

struct Mlp : torch::nn::Module {
  Mlp(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::nn::Linear fc1, fc2;
};

/// One training step under the nanny (the step where fp16 first fails); `loss_of` is the forward.
template <typename LossOf>
Run one_step(const std::shared_ptr<torch::nn::Module>& model, LossOf&& loss_of) {
  ScratchDir dir;
  Nanny nanny(model, traced_every_step(dir));
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(1e-3));
  {
    auto guard = nanny.step(0);
    optimizer.zero_grad();
    torch::Tensor loss = loss_of();
    loss.backward();
    optimizer.step();
  }
  nanny.close();
  return summary(nanny);
}

/// Both runs of a scenario: `scenario(dtype)` builds its model and data in `dtype` and trains;
/// `expected` ("OVERFLOW@aten::addmm") is the one alert on an op both must raise.
template <typename Scenario>
void expect_agreement(Scenario&& scenario, const std::string& expected) {
  const Run fp32 = scenario(torch::kFloat);
  const Run fp16 = scenario(torch::kHalf);
  EXPECT_EQ(fp32.op_alerts, std::set<std::string>{expected}) << "fp32 run:\n" << fp32.listing;
  EXPECT_EQ(fp16.op_alerts, std::set<std::string>{expected}) << "fp16 run:\n" << fp16.listing;
  EXPECT_EQ(fp16.dtypes, (std::set<std::string>{"Half"})) << "the fp16 run computed in fp16";
}

TEST(RealFp16, OverflowInALinearLayer) {
  SKIP_UNLESS_THE_CPU_COMPUTES_FP16();
  expect_agreement(
      [&](torch::Dtype dtype) {
        torch::manual_seed(3);
        auto net = std::make_shared<OverflowNet>(4500.0);
        net->to(dtype);
        const torch::Tensor x = torch::full({8, 16}, 2.0).to(dtype), y = torch::randn({8, 8}).to(dtype);
        return one_step(net, [&] {
          auto h = net->fc1(x);  // about 144000: > 65504 in fp32, inf in fp16
          return torch::mse_loss(net->fc2(net->norm(h)), y);
        });
      },
      "OVERFLOW@aten::addmm");
}

TEST(RealFp16, UnderflowOfScaledOutputs) {
  SKIP_UNLESS_THE_CPU_COMPUTES_FP16();
  expect_agreement(
      [&](torch::Dtype dtype) {
        torch::manual_seed(5);
        auto net = std::make_shared<Mlp>(16, 32, 8);
        net->to(dtype);
        const torch::Tensor x = torch::randn({16, 16}).to(dtype), y = torch::randn({16, 8}).to(dtype);
        return one_step(net, [&] {
          auto h = torch::relu(net->fc1(x));
          // Outputs times 1e-6: below fp16's smallest normal 6.1e-5, held as subnormals in fp16.
          auto scaled = torch::div(h, 1e6);
          return torch::mse_loss(net->fc2(h), y) + torch::mse_loss(scaled, torch::zeros_like(scaled));
        });
      },
      "UNDERFLOW@aten::div");
}

TEST(RealFp16, NanFromTheLogOfANegative) {
  SKIP_UNLESS_THE_CPU_COMPUTES_FP16();
  expect_agreement(
      [&](torch::Dtype dtype) {
        torch::manual_seed(6);
        auto net = std::make_shared<Mlp>(16, 32, 8);
        net->to(dtype);
        const torch::Tensor x = torch::randn({16, 16}).to(dtype), y = torch::randn({16, 8}).to(dtype);
        return one_step(net, [&] {
          auto logged = torch::log(net->fc1(x));
          return torch::mse_loss(net->fc2(logged), y);
        });
      },
      "NAN@aten::log");
}

TEST(RealFp16, MixedScaleReductionSwamps) {
  SKIP_UNLESS_THE_CPU_COMPUTES_FP16();
  expect_agreement(
      [&](torch::Dtype dtype) {
        torch::manual_seed(11);
        auto net = std::make_shared<Mlp>(16, 32, 8);
        auto mixed = torch::cat({torch::full({256}, 2.0), torch::full({256}, 1e-6)}).requires_grad_(true);
        net->register_parameter("mixed", mixed);
        net->to(dtype);
        const torch::Tensor x = torch::randn({16, 16}).to(dtype), y = torch::randn({16, 8}).to(dtype);
        return one_step(net, [&] {
          auto total = torch::sum(net->named_parameters()["mixed"]);  // the 1e-6 half is lost
          return torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y) + total * 1e-3;
        });
      },
      "SWAMPING@aten::sum");
}

}  // namespace
}  // namespace mpnanny
