// Integration scenarios: real LibTorch training on the CPU in fp32, judged against an fp16 (or
// bf16) target. Each asserts the exact set of alerts, with the source line of the op that caused
// them (this file's lines, captured with __LINE__ next to the op) or the parameter name, and
// that nothing else fires. The nanny's life around a training (environment, forks, threads,
// watch()) is in test_lifecycle.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>


#include <cfenv>
#include <filesystem>
#include <set>
#include <thread>

#include "ScenarioSupport.h"
#include "TestSupport.h"
#include "TracedEveryStep.h"
#include "mpnanny/GradScaler.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

// The helpers: ScenarioSupport.h, TestSupport.h, TracedEveryStep.h.
using namespace test;

constexpr const char* kThisFile = "test_scenarios.cpp";

std::string at_line(int line) { return std::string(kThisFile) + ":" + std::to_string(line); }

TEST(Scenario, HealthyMlpRaisesNothing) {
  ScratchDir dir;
  torch::manual_seed(0);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({64, 16}), y = torch::randn({64, 8});
  int forward_line = 0;
  {
    Nanny nanny(net, traced_every_step(dir));
    EXPECT_EQ(writer_threads(), 1);
    train(nanny, *net, 20, [&](int64_t) {
      auto out = net->fc2(torch::relu(net->fc1(x))); forward_line = __LINE__;
      return torch::mse_loss(out, y);
    });
    nanny.close();
    EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
    const std::string db = nanny.database_path();
    EXPECT_EQ(query_value(db, "SELECT count(*) FROM steps WHERE traced=1"), "20");
    EXPECT_EQ(query_value(db, "SELECT count(*) FROM alerts"), "0");
    // Both Linear layers are observed and attributed to the line that calls them.
    EXPECT_EQ(query_value(db, "SELECT count(DISTINCT l.line) FROM tensor_stats t JOIN locations l "
                              "USING(run_id, location_id) WHERE t.op='aten::addmm' AND t.phase='forward'"),
              "1");
    EXPECT_EQ(query_value(db, "SELECT l.line FROM tensor_stats t JOIN locations l USING(run_id, location_id) "
                              "WHERE t.op='aten::addmm' LIMIT 1"),
              std::to_string(forward_line));
    // The backward pass is attributed to the same line: the autograd nodes the op created (known
    // by their sequence numbers) report the gradients they pass on.
    EXPECT_NE(query_value(db, "SELECT count(*) FROM tensor_stats t JOIN locations l USING(run_id, location_id) "
                              "WHERE t.phase='backward' AND l.line=" + std::to_string(forward_line)),
              "0");
    EXPECT_EQ(query_value(db, "SELECT count(*) FROM tensor_stats WHERE phase='gradient' AND step=0"), "4");
    EXPECT_NE(query_value(db, "SELECT count(*) FROM tensor_stats WHERE phase='weight' AND update_ratio > 0"), "0");
    EXPECT_EQ(query_value(db, "SELECT count(*) FROM scalars WHERE name='loss'"), "20");
    EXPECT_NE(query_value(db, "SELECT min(rss_bytes) FROM memory"), "-1");
  }
  EXPECT_EQ(writer_threads(), 0) << "the nanny left its writer thread running";
}

struct ConvNet : torch::nn::Module {
  ConvNet()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3).padding(1)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)))),
        head(register_module("head", torch::nn::Linear(8 * 4 * 4, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    return head(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear head;
};

TEST(Scenario, HealthyConvNetTracedEveryStepRaisesNothing) {
  ScratchDir dir;
  torch::manual_seed(1);
  auto net = std::make_shared<ConvNet>();
  const torch::Tensor x = torch::randn({32, 1, 16, 16}), y = torch::randint(10, {32});
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 20, [&](int64_t) { return torch::nn::functional::cross_entropy(net->forward(x), y); }, 0.05);
  nanny.close();
  EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
}

/// The example's attention block (examples/train_attention.cpp), with the mask fill value as a
/// parameter: -1e4 is exact in fp16, -1e9 is out of its range.
struct Attention : torch::nn::Module {
  Attention(int64_t vocab, int64_t dim, double mask_value)
      : dim_(dim), mask_value_(mask_value),
        embed(register_module("embed", torch::nn::Embedding(vocab, dim))),
        qkv(register_module("qkv", torch::nn::Linear(dim, 3 * dim))),
        proj(register_module("proj", torch::nn::Linear(dim, dim))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
        head(register_module("head", torch::nn::Linear(dim, 4))) {}
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& padding) {
    const int64_t batch = tokens.size(0), seq = tokens.size(1), heads = 4, head_dim = dim_ / heads;
    auto x = embed(tokens);
    auto parts = qkv(x).chunk(3, -1);
    auto split = [&](const torch::Tensor& t) { return t.view({batch, seq, heads, head_dim}).transpose(1, 2); };
    auto scores = torch::matmul(split(parts[0]), split(parts[1]).transpose(-2, -1)) / std::sqrt(double(head_dim));
    scores = scores.masked_fill(padding.unsqueeze(1).unsqueeze(2), mask_value_); mask_line = __LINE__;
    auto attention = torch::softmax(scores, -1);
    auto context = torch::matmul(attention, split(parts[2])).transpose(1, 2).reshape({batch, seq, dim_});
    auto h = norm(x + proj(context));
    auto keep = (~padding).unsqueeze(-1).to(h.scalar_type());
    return head((h * keep).sum(1) / keep.sum(1).clamp_min(1.0));
  }
  int64_t dim_;
  double mask_value_;
  int mask_line = 0;
  torch::nn::Embedding embed;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};

void train_attention(Nanny& nanny, Attention& net, int64_t steps) {
  const torch::Tensor tokens = torch::randint(64, {16, 12});
  const torch::Tensor padding = torch::arange(12).unsqueeze(0) >= torch::randint(6, 13, {16, 1});
  const torch::Tensor labels = std::get<0>(tokens.remainder(4).mode(1));
  torch::optim::Adam optimizer(net.parameters(), torch::optim::AdamOptions(1e-3));
  for (int64_t step = 0; step < steps; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(net.forward(tokens, padding), labels);
    loss.backward();
    optimizer.step();
  }
}

TEST(Scenario, HealthyAttentionModelRaisesNothing) {
  ScratchDir dir;
  torch::manual_seed(2);
  auto net = std::make_shared<Attention>(64, 32, -1e4);
  Nanny nanny(net, traced_every_step(dir));
  train_attention(nanny, *net, 20);
  nanny.close();
  EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
}

TEST(Scenario, ExampleMaskFillOfMinusOneBillionOverflowsFp16) {
  ScratchDir dir;
  torch::manual_seed(2);
  auto net = std::make_shared<Attention>(64, 32, -1e9);
  Nanny nanny(net, traced_every_step(dir));
  train_attention(nanny, *net, 3);
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(net->mask_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(nanny.alerts().front().op, "aten::masked_fill");
}

TEST(Scenario, Fp16OverflowInALinearLayer) {
  ScratchDir dir;
  torch::manual_seed(3);
  auto net = std::make_shared<OverflowNet>(4500.0);
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  int overflow_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 3, [&](int64_t) {
    auto h = net->fc1(x); overflow_line = __LINE__;  // about 144000 > 65504
    return torch::mse_loss(net->fc2(net->norm(h)), y);
  });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line)}))
      << listing(nanny.alerts());
  const Alert first = nanny.alerts().front();
  EXPECT_EQ(first.step, 0);
  EXPECT_EQ(first.severity, Severity::Error);
  EXPECT_NEAR(first.value, 144000.0, 2.0);
  // The database holds the same alert with its source line, readable by the CLI.
  EXPECT_EQ(query_value(nanny.database_path(),
                        "SELECT DISTINCT type || ':' || line FROM alerts WHERE file LIKE '%test_scenarios.cpp'"),
            "OVERFLOW:" + std::to_string(overflow_line));
}

TEST(Scenario, Bf16TargetRaisesNoFp16OnlyAlerts) {
  ScratchDir dir;
  torch::manual_seed(3);
  auto net = std::make_shared<OverflowNet>(4500.0);
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  Options options = traced_every_step(dir);
  options.precision = Precision::BF16;
  Nanny nanny(net, options);
  train(nanny, *net, 3, [&](int64_t) {
    auto h = net->fc1(x);
    auto tiny = torch::div(net->fc2(torch::relu(h)), 1e8);  // 1e-8 is a normal bf16 value
    return torch::mse_loss(net->fc2(net->norm(h)), y) + tiny.mean() * 0;
  });
  nanny.close();
  EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
}

TEST(Scenario, Bf16TensorsEndToEnd) {
  ScratchDir dir;
  torch::manual_seed(4);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  net->to(torch::kBFloat16);
  const torch::Tensor x = torch::randn({32, 16}).to(torch::kBFloat16), y = torch::randn({32, 8}).to(torch::kBFloat16);
  Options options = traced_every_step(dir);
  options.precision = Precision::BF16;
  Nanny nanny(net, options);
  // LibTorch 1.13 has no bf16 mse_loss on the CPU: the loss is taken in fp32, as the example does.
  train(nanny, *net, 5, [&](int64_t) {
    return torch::mse_loss(net->fc2(torch::relu(net->fc1(x))).to(torch::kFloat), y.to(torch::kFloat));
  });
  nanny.close();
  EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT DISTINCT dtype FROM tensor_stats WHERE op='aten::addmm'"),
            "BFloat16");
}

TEST(Scenario, UnderflowOfScaledOutputs) {
  ScratchDir dir;
  torch::manual_seed(5);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  int underflow_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 2, [&](int64_t) {
    auto h = torch::relu(net->fc1(x));
    auto scaled = torch::div(h, 1e8); underflow_line = __LINE__;  // outputs times 1e-8: below 2^-24
    return torch::mse_loss(net->fc2(h), y) + torch::mse_loss(scaled, torch::zeros_like(scaled));
  });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"UNDERFLOW@" + at_line(underflow_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(nanny.alerts().front().severity, Severity::Warning);
}

TEST(Scenario, NanFromTheLogOfANegative) {
  ScratchDir dir;
  torch::manual_seed(6);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  int nan_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) {
    auto h = net->fc1(x);
    auto logged = torch::log(h); nan_line = __LINE__;
    return torch::mse_loss(net->fc2(logged), y);
  });
  nanny.close();
  // The NaN spreads to the loss, the backward pass and the gradients; only its origin is named.
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"NAN@" + at_line(nan_line)})) << listing(nanny.alerts());
  EXPECT_EQ(nanny.alerts().front().op, "aten::log");
}

TEST(Scenario, InjectedInfinity) {
  ScratchDir dir;
  torch::manual_seed(7);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  torch::Tensor first = torch::zeros({16, 32}, torch::kBool);
  first.index_put_({0, 0}, true);
  int inf_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) {
    auto h = net->fc1(x);
    auto injected = h.masked_fill(first, std::numeric_limits<double>::infinity()); inf_line = __LINE__;
    return torch::mse_loss(net->fc2(injected), y);
  });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"INF@" + at_line(inf_line)})) << listing(nanny.alerts());
}

#ifdef __GLIBC__
// A training that traps on floating-point exceptions, as one does to find where a NaN starts,
// must not be stopped by the nanny: its rules and statistics meet the infinities and NaNs the
// training holds without trapping (+inf and -inf that the stat pass's lanes add together, a NaN
// loss that the rules compare), and the training's traps are as they were after each step. The
// training itself only selects and clamps them, which raises nothing.
TEST(Scenario, ATrainingThatTrapsOnFloatingPointExceptionsIsNotStopped) {
  ScratchDir dir;
  torch::manual_seed(7);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  torch::Tensor positive = torch::zeros({16, 32}, torch::kBool), negative = torch::zeros({16, 32}, torch::kBool);
  positive.index_put_({0, 3}, true);
  negative.index_put_({2, 3}, true);  // 64 elements on: the same lane of the stat pass
  const torch::Tensor nans = torch::full({16, 32}, std::nan(""));
  int inf_line = 0;
  constexpr int kTraps = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW;
  std::vector<int> traps_after_steps;
  {
    Nanny nanny(net, traced_every_step(dir));
    const int threads = at::get_num_threads();
    at::set_num_threads(1);  // every chunk of the stat pass on this thread, which traps
    feenableexcept(kTraps);
    torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
    for (int64_t step = 0; step < 2; ++step) {
      {
        auto guard = nanny.step(step);
        optimizer.zero_grad();
        auto h = net->fc1(x);
        const double inf = std::numeric_limits<double>::infinity();
        auto injected = h.masked_fill(positive, inf).masked_fill(negative, -inf); inf_line = __LINE__;
        auto bounded = injected.clamp(-1, 1);
        if (step == 1) bounded = torch::where(positive, nans, bounded);
        torch::Tensor loss = torch::mse_loss(net->fc2(bounded), y);
        loss.backward();
        optimizer.step();
        nanny.record_scalar("loss", step == 1 ? std::nan("") : 0.5);  // item() of a NaN traps in ATen
      }
      traps_after_steps.push_back(fegetexcept());
    }
    fedisableexcept(FE_ALL_EXCEPT);
    at::set_num_threads(threads);
    nanny.close();
    // The NaN reaches the watched ops after the infinities did, in the same rows: only the first
    // bad site is named.
    EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"INF@" + at_line(inf_line)})) << listing(nanny.alerts());
  }
  EXPECT_EQ(traps_after_steps, (std::vector<int>{kTraps, kTraps}));
}
#endif

TEST(Scenario, InfinityInTheBatchIsReportedAtTheFirstOpThatReadsIt) {
  ScratchDir dir;
  torch::manual_seed(7);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  torch::Tensor x = torch::randn({16, 16});
  const torch::Tensor y = torch::randn({16, 8});
  {
    torch::NoGradGuard no_grad;  // written before the step: no observed op produces the Inf
    x[0][0] = std::numeric_limits<float>::infinity();
  }
  int read_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) {
    auto h = net->fc1(x); read_line = __LINE__;
    return torch::mse_loss(net->fc2(torch::relu(h)), y);
  });
  nanny.close();
  // Every later op and gradient holds Inf or NaN too: propagation of the one reported origin.
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"INF@" + at_line(read_line)})) << listing(nanny.alerts());
  ASSERT_FALSE(nanny.alerts().empty());
  EXPECT_NE(nanny.alerts().front().message.find("already in the op's input"), std::string::npos)
      << nanny.alerts().front().message;
}

TEST(Scenario, GradientExplosion) {
  ScratchDir dir;
  torch::manual_seed(8);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  {
    torch::NoGradGuard no_grad;
    net->fc2->weight.fill_(1400.0);
  }
  const torch::Tensor x = torch::ones({16, 16});
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) { return net->fc2(torch::relu(net->fc1(x))).mean(); });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"GRAD_EXPLOSION@fc1.weight"})) << listing(nanny.alerts());
  EXPECT_GT(nanny.alerts().front().value, 1e4);
}

TEST(Scenario, GradientVanishing) {
  ScratchDir dir;
  torch::manual_seed(9);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  {
    torch::NoGradGuard no_grad;
    net->fc1->weight.fill_(1e-12);
    net->fc2->weight.fill_(1e-12);
  }
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 2, [&](int64_t) { return torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y); });
  nanny.close();
  // fc1's gradients pass through fc2's 1e-12 weights; fc2's own see normal activations.
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"GRAD_VANISH@fc1.weight", "GRAD_VANISH@fc1.bias"}))
      << listing(nanny.alerts());
}

TEST(Nanny, KeepsTheFirstAlertsInMemoryAndEveryAlertInTheDatabase) {
  ScratchDir dir;
  torch::manual_seed(9);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  {
    torch::NoGradGuard no_grad;
    net->fc1->weight.fill_(1e-12);
    net->fc2->weight.fill_(1e-12);
  }
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  Options options = traced_every_step(dir);
  options.alerts_in_memory = 3;
  Nanny nanny(net, options);
  // A learning rate of 0 keeps the weights, and so the alerts, the same on every step.
  train(nanny, *net, 4, [&](int64_t) { return torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y); }, 0.0);
  nanny.close();
  // Two vanishing gradients a step over four steps: eight alerts, of which the first three kept.
  ASSERT_EQ(nanny.alerts().size(), 3u) << listing(nanny.alerts());
  EXPECT_EQ(nanny.alerts().front().step, 0);
  EXPECT_EQ(nanny.alerts().back().step, 1);
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM alerts"), "8");
}

TEST(Scenario, ReductionOverflow) {
  ScratchDir dir;
  torch::manual_seed(10);
  auto net = std::make_shared<Mlp>(16, 256, 8);
  {
    torch::NoGradGuard no_grad;
    net->fc1->weight.fill_(22.0);  // 16 inputs of 1 * 22 = 352 per output
    net->fc1->bias.zero_();
  }
  const torch::Tensor x = torch::ones({4, 16}), y = torch::randn({4});
  int sum_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) {
    auto h = net->fc1(x);
    auto total = h.sum(1); sum_line = __LINE__;  // 256 * 352 = 90112 > 65504
    return torch::mse_loss(torch::div(total, 1e5), y);
  });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(sum_line)})) << listing(nanny.alerts());
  EXPECT_EQ(nanny.alerts().front().op, "aten::sum");
}

TEST(Scenario, MixedScaleReductionSwamps) {
  ScratchDir dir;
  torch::manual_seed(11);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  // A functional sum outside any module: a per-module monitor never sees it.
  auto mixed = torch::cat({torch::full({256}, 2.0), torch::full({256}, 1e-6)}).requires_grad_(true);
  net->register_parameter("mixed", mixed);
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  int sum_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) {
    auto total = torch::sum(mixed); sum_line = __LINE__;  // 512.000256: the 1e-6 half is lost
    return torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y) + total * 1e-3;
  });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"SWAMPING@" + at_line(sum_line)})) << listing(nanny.alerts());
}

TEST(Scenario, OverflowThenNanInALaterLayerNamesTheFirstBadSite) {
  ScratchDir dir;
  torch::manual_seed(12);
  auto net = std::make_shared<OverflowNet>(4500.0);
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  int overflow_line = 0, nan_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 1, [&](int64_t) {
    auto h = net->fc1(x); overflow_line = __LINE__;
    auto z = net->fc2(net->norm(h));
    auto root = torch::sqrt(z); nan_line = __LINE__;  // z has negative entries
    return torch::mse_loss(root, y);
  });
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()),
            (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line), "NAN@" + at_line(nan_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(describe(nanny.alerts().front()), "OVERFLOW@" + at_line(overflow_line));
}

TEST(Scenario, ProgressiveDegradationFiresWhenTheWeightsJump) {
  ScratchDir dir;
  torch::manual_seed(13);
  auto net = std::make_shared<OverflowNet>(1.0);
  const torch::Tensor x = torch::ones({8, 16}), y = torch::randn({8, 8});
  int linear_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(
      nanny, *net, 6,
      [&](int64_t step) {
        if (step == 3) {
          torch::NoGradGuard no_grad;
          net->fc1->weight.fill_(5000.0);  // 16 * 5000 = 80000 > 65504
        }
        auto h = net->fc1(x); linear_line = __LINE__;
        return torch::mse_loss(net->fc2(net->norm(h)), y);
      },
      /*lr=*/0.0);
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(linear_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(nanny.alerts().front().step, 3);
}

TEST(Scenario, FunctionalOpsWithoutModulesAreObserved) {
  ScratchDir dir;
  torch::manual_seed(14);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({16, 16}), y = torch::randn({16, 8});
  int softmax_line = 0, sum_line = 0, log_line = 0;
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 2, [&](int64_t) {
    auto logits = net->fc2(torch::relu(net->fc1(x)));
    auto p = torch::softmax(logits, -1); softmax_line = __LINE__;
    auto total = p.sum(); sum_line = __LINE__;
    auto logged = torch::log(p + 1e-3); log_line = __LINE__;
    return torch::mse_loss(logged, y) + total * 0;
  });
  nanny.close();
  EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
  const std::string db = nanny.database_path();
  for (const auto& [op, line] : std::vector<std::pair<std::string, int>>{
           {"aten::softmax", softmax_line}, {"aten::sum", sum_line}, {"aten::log", log_line}}) {
    EXPECT_EQ(query_value(db, "SELECT count(*) FROM tensor_stats t JOIN locations l USING(run_id, location_id) "
                              "WHERE t.phase='forward' AND t.op='" + op + "' AND l.line=" + std::to_string(line) +
                              " AND l.file LIKE '%test_scenarios.cpp'"),
              "2")
        << op;
  }
}

TEST(Scenario, DenseSamplingAfterAnError) {
  ScratchDir dir;
  torch::manual_seed(15);
  auto net = std::make_shared<OverflowNet>(4500.0);
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  Options options = traced_every_step(dir);
  options.trace_interval = 100;
  options.dense_steps = 4;
  Nanny nanny(net, options);
  train(nanny, *net, 10, [&](int64_t step) {
    if (step == 1) {
      torch::NoGradGuard no_grad;
      net->fc1->weight.normal_(0.0, 0.1);  // healthy again after the first step
    }
    return torch::mse_loss(net->fc2(net->norm(net->fc1(x))), y);
  });
  nanny.close();
  const std::string db = nanny.database_path();
  EXPECT_EQ(query(db, "SELECT step FROM steps WHERE traced=1 ORDER BY step"),
            (test::Rows{{"0"}, {"1"}, {"2"}, {"3"}, {"4"}}));
  EXPECT_EQ(query(db, "SELECT step FROM steps WHERE dense=1 ORDER BY step"), (test::Rows{{"1"}, {"2"}, {"3"}, {"4"}}));
  EXPECT_EQ(query_value(db, "SELECT count(*) FROM steps"), "10");
  EXPECT_EQ(query_value(db, "SELECT group_concat(DISTINCT step) FROM alerts"), "0");
}

TEST(Scenario, LossScaleOf65536OnAHealthyModelRaisesNoGradientAlert) {
  for (const bool tell_the_nanny : {true, false}) {
    SCOPED_TRACE(tell_the_nanny ? "scale known" : "scale unknown");
    ScratchDir dir;
    torch::manual_seed(16);
    auto net = std::make_shared<Mlp>(16, 32, 8);
    const torch::Tensor x = torch::randn({64, 16}), y = torch::randn({64, 8});
    const double scale = 65536.0;
    Options options = traced_every_step(dir);
    if (tell_the_nanny) options.loss_scale = [&] { return scale; };
    Nanny nanny(net, options);
    torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
    for (int64_t step = 0; step < 5; ++step) {
      auto guard = nanny.step(step);
      optimizer.zero_grad();
      (torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y) * scale).backward();
      for (auto& parameter : net->parameters()) parameter.mutable_grad().div_(scale);  // hand-rolled unscale
      optimizer.step();
    }
    nanny.close();
    if (tell_the_nanny) {
      EXPECT_TRUE(distinct(nanny.alerts()).empty()) << listing(nanny.alerts());
      EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM loss_scale WHERE scale=65536"), "5");
    } else {
      // Without the scale the same gradients look 65536 times too large: the test can fail.
      EXPECT_FALSE(distinct(nanny.alerts()).empty());
    }
  }
}

TEST(Scenario, LossScaleBackoffsAreDrops) {
  ScratchDir dir;
  torch::manual_seed(17);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({64, 16}), y = torch::randn({64, 8});
  double scale = 65536.0;
  Options options = traced_every_step(dir);
  options.loss_scale = [&] { return scale; };
  Nanny nanny(net, options);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int64_t step = 0; step < 8; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    (torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y) * scale).backward();
    for (auto& parameter : net->parameters()) parameter.mutable_grad().div_(scale);
    optimizer.step();
    if (step == 2 || step == 5) scale /= 2;  // the scaler's update after an overflow
  }
  nanny.close();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"LOSS_SCALE_DROP@loss_scale"})) << listing(nanny.alerts());
  std::vector<int64_t> steps;
  for (const Alert& alert : nanny.alerts()) steps.push_back(alert.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(query(nanny.database_path(), "SELECT step FROM loss_scale WHERE skipped=1 ORDER BY step"),
            (test::Rows{{"2"}, {"5"}}));
}

}  // namespace
}  // namespace mpnanny
