// Integration scenarios: real LibTorch training on the CPU in fp32, judged against an fp16 (or
// bf16) target. Each asserts the exact set of alerts, with the source line of the op that caused
// them (this file's lines, captured with __LINE__ next to the op) or the parameter name, and
// that nothing else fires.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cfenv>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "../../runtime/src/SourceLocator.h"
#include "TestSupport.h"
#include "attribution/Attribution.h"
#include "TracedEveryStep.h"
#include "mpnanny/GradScaler.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

using test::query;
using test::query_value;
using test::ScratchDir;
using test::traced_every_step;

constexpr const char* kThisFile = "test_scenarios.cpp";

std::string at_line(int line) { return std::string(kThisFile) + ":" + std::to_string(line); }

/// "TYPE@file:line" for op alerts, "TYPE@parameter" for parameter alerts.
std::string describe(const Alert& alert) {
  std::string where = alert.name;
  if (where.empty()) {
    where = std::filesystem::path(alert.location.file).filename().string() + ":" + std::to_string(alert.location.line);
  }
  return std::string(to_string(alert.type)) + "@" + where;
}

std::set<std::string> distinct(const std::vector<Alert>& alerts) {
  std::set<std::string> result;
  for (const Alert& alert : alerts) result.insert(describe(alert));
  return result;
}

std::string listing(const std::vector<Alert>& alerts) {
  std::string text;
  for (const Alert& alert : alerts) {
    text += "  step " + std::to_string(alert.step) + " " + describe(alert) + " (" + alert.op + " " +
            to_string(alert.phase) + "): " + alert.message + "\n";
  }
  return text;
}

struct Mlp : torch::nn::Module {
  Mlp(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::nn::Linear fc1, fc2;
};

/// Runs `steps` training steps under the nanny; `loss_of(step)` is the forward pass.
template <typename LossOf>
void train(Nanny& nanny, torch::nn::Module& model, int64_t steps, LossOf&& loss_of, double lr = 1e-3) {
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(lr));
  for (int64_t step = 0; step < steps; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    torch::Tensor loss = loss_of(step);
    loss.backward();
    optimizer.step();
    nanny.record_scalar("loss", loss.item<double>());
  }
}

/// Threads of this process named like the nanny's writer.
int writer_threads() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    count += name == "mpnanny-writer";
  }
  return count;
}

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

/// fc1 with weights `weight` everywhere, inputs 2: outputs 16 * 2 * weight.
struct OverflowNet : torch::nn::Module {
  explicit OverflowNet(double weight)
      : fc1(register_module("fc1", torch::nn::Linear(16, 32))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})))),
        fc2(register_module("fc2", torch::nn::Linear(32, 8))) {
    torch::NoGradGuard no_grad;
    fc1->weight.fill_(weight);
  }
  torch::nn::Linear fc1;
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc2;
};

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

TEST(Nanny, DisabledByTheEnvironment) {
  ScratchDir dir;
  setenv("MPNANNY_DISABLE", "1", 1);
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Nanny nanny(net, traced_every_step(dir));
  unsetenv("MPNANNY_DISABLE");
  EXPECT_FALSE(nanny.active());
  { auto guard = nanny.step(0); }
  nanny.close();
  EXPECT_FALSE(std::filesystem::exists(dir.file("metrics.db")));
}

TEST(Nanny, EnvironmentOverridesDirectoryIntervalAndRankFile) {
  ScratchDir dir;
  setenv("MPNANNY_DIR", (dir.path() + "/from-env").c_str(), 1);
  setenv("MPNANNY_TRACE_INTERVAL", "3", 1);
  setenv("RANK", "2", 1);
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Options options;
  options.verbosity = 0;
  Nanny nanny(net, options);
  unsetenv("MPNANNY_DIR");
  unsetenv("MPNANNY_TRACE_INTERVAL");
  unsetenv("RANK");
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 7, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.close();
  EXPECT_EQ(nanny.options().trace_interval, 3);
  EXPECT_EQ(nanny.database_path(), dir.path() + "/from-env/metrics-rank2.db");
  EXPECT_EQ(query(nanny.database_path(), "SELECT step FROM steps WHERE traced=1 ORDER BY step"),
            (test::Rows{{"0"}, {"3"}, {"6"}}));
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT rank FROM runs"), "2");
  EXPECT_NE(query_value(nanny.database_path(), "SELECT options_json FROM runs").find("\"trace_interval\":3"),
            std::string::npos);
}

// Values that are not what a variable means are ignored with a warning: read with atoi, RANK=abc
// wrote into rank 0's file, MPNANNY_DISABLE=no switched monitoring off, and an interval past int64
// was clamped without a word.
TEST(Nanny, EnvironmentValuesThatMeanNothingAreIgnoredWithAWarning) {
  ScratchDir dir;
  setenv("MPNANNY_DISABLE", "No", 1);
  setenv("MPNANNY_TRACE_INTERVAL", "99999999999999999999", 1);
  setenv("RANK", "abc", 1);
  setenv("WORLD_SIZE", "0", 1);
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Options options = traced_every_step(dir);
  options.trace_interval = 2;
  testing::internal::CaptureStderr();
  Nanny nanny(net, options);
  const std::string warnings = testing::internal::GetCapturedStderr();
  for (const char* name : {"MPNANNY_DISABLE", "MPNANNY_TRACE_INTERVAL", "RANK", "WORLD_SIZE"}) unsetenv(name);
  EXPECT_TRUE(nanny.active());
  EXPECT_EQ(nanny.options().trace_interval, 2);
  EXPECT_EQ(nanny.database_path(), dir.file("metrics.db"));
  EXPECT_NE(warnings.find("ignoring MPNANNY_TRACE_INTERVAL='99999999999999999999' (expected an integer from 0 up)"),
            std::string::npos) << warnings;
  EXPECT_NE(warnings.find("ignoring RANK='abc'"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("ignoring WORLD_SIZE='0' (expected an integer from 1 to 2147483647)"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("MPNANNY_DISABLE"), std::string::npos) << "'No' is a value it knows: " << warnings;

  setenv("MPNANNY_DISABLE", "maybe", 1);
  testing::internal::CaptureStderr();
  Nanny unsure(net, traced_every_step(dir));
  const std::string unsure_warnings = testing::internal::GetCapturedStderr();
  setenv("MPNANNY_DISABLE", "ON", 1);
  Nanny disabled(net, traced_every_step(dir));
  unsetenv("MPNANNY_DISABLE");
  EXPECT_NE(unsure_warnings.find("ignoring MPNANNY_DISABLE='maybe'"), std::string::npos) << unsure_warnings;
  EXPECT_FALSE(disabled.active());
}

// A data loader's workers run ops on their own threads while the training loop runs a step:
// normalizing the next batches is not the model's forward pass, and was recorded as it, under
// whatever step was current and with no line of the model.
TEST(Scenario, OpsOnAnotherThreadDuringAStepAreNotTheSteps) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 8, 4);
  const torch::Tensor x = torch::randn({2, 4});
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 3, [&](int64_t) {
    std::thread worker([] { (void)torch::exp(torch::full({64}, 20.0)); });  // 4.9e8: fp16 OVERFLOW
    worker.join();
    return torch::softmax(net->fc2(net->fc1(x)), 1).pow(2).mean();
  });
  nanny.close();
  EXPECT_TRUE(nanny.alerts().empty()) << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::exp'"), "0");
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::softmax' AND phase = 'forward'"), "3");
}

// A program that forks after its Nanny started: the child neither hangs at exit (destroying the
// writer waited forever on the parent's writer thread's condition variable) nor loses what it
// trains to a queue no thread reads; a Nanny it makes watches it, and the parent's run goes on.
TEST(Nanny, AForkedChildExitsAndItsOwnNannyWatchesIt) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 8, 4);
  const torch::Tensor x = torch::randn({2, 4});
  const auto loss_of = [&](int64_t) { return torch::softmax(net->fc2(net->fc1(x)), 1).pow(2).mean(); };
  Options options = traced_every_step(dir);
  options.output_dir = dir.file("parent");
  Nanny nanny(net, options);
  train(nanny, *net, 3, loss_of);
  std::fflush(nullptr);
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // Exit codes tell the parent what went wrong.
    train(nanny, *net, 3, loss_of);  // the inherited Nanny: off, quietly
    nanny.flush();
    nanny.close();
    if (nanny.active()) _exit(3);
    Options own = traced_every_step(dir);
    own.output_dir = dir.file("child");
    Nanny child_nanny(net, own);
    train(child_nanny, *net, 2, loss_of);
    child_nanny.close();
    if (query_value(child_nanny.database_path(), "SELECT count(*) FROM steps") != "2") _exit(4);
    if (query_value(child_nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::softmax' AND phase = 'forward'") != "2") {
      _exit(5);
    }
    std::exit(0);  // static destructors and atexit handlers run, as at the end of main
  }
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; waited_ms < 60000 && done == 0; waited_ms += 50) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child did not exit within 60 s";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int64_t step = 3; step < 5; ++step) {
    auto guard = nanny.step(step);
    loss_of(step).backward();
  }
  EXPECT_TRUE(nanny.active());
  nanny.close();
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM steps"), "5");
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::softmax' AND phase = 'forward'"), "5");
}

TEST(Nanny, UnwritableDirectoryWarnsOnceAndTrainingContinues) {
  ScratchDir dir;
  const std::string blocker = dir.file("file");
  std::fclose(std::fopen(blocker.c_str(), "w"));
  Options options;
  options.output_dir = blocker + "/logs";
  auto net = std::make_shared<Mlp>(4, 4, 4);
  testing::internal::CaptureStderr();
  Nanny nanny(net, options);
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 3, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.flush();
  nanny.close();
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(nanny.active());
  size_t count = 0;
  for (size_t at = warnings.find("switched off"); at != std::string::npos; at = warnings.find("switched off", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << warnings;
}

TEST(Nanny, StepsThatAreNotTracedObserveNothing) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Options options = traced_every_step(dir);
  options.trace_interval = 5;
  Nanny nanny(net, options);
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 7, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.close();
  EXPECT_EQ(query(nanny.database_path(), "SELECT DISTINCT step FROM tensor_stats ORDER BY step"),
            (test::Rows{{"0"}, {"5"}}));
}

TEST(Nanny, WatchTracesWithoutAStepLoop) {
  ScratchDir dir;
  torch::manual_seed(18);
  auto net = std::make_shared<OverflowNet>(4500.0);
  Options options = traced_every_step(dir);
  Nanny& nanny = watch(net, options);
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  int overflow_line = 0;
  for (int i = 0; i < 3; ++i) {
    optimizer.zero_grad();
    auto h = net->fc1(x); overflow_line = __LINE__;
    torch::mse_loss(net->fc2(net->norm(h)), y).backward();
    optimizer.step();
  }
  nanny.flush();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM steps"), "3");
  nanny.close();
}

// watch() has no step loop to follow: a step ends with each backward pass, whatever the model
// leaves unused (a parameter without a gradient must not carry steps over into the next pass).
TEST(Nanny, WatchEndsAStepWithEachBackwardPassEvenWithUnusedParameters) {
  struct WithSpare : torch::nn::Module {
    WithSpare()
        : fc1(register_module("fc1", torch::nn::Linear(4, 8))),
          fc2(register_module("fc2", torch::nn::Linear(8, 2))),
          spare(register_module("spare", torch::nn::Linear(8, 8))) {}
    torch::nn::Linear fc1, fc2, spare;
  };
  ScratchDir dir;
  torch::manual_seed(19);
  auto net = std::make_shared<WithSpare>();
  Nanny& nanny = watch(net, traced_every_step(dir));
  const torch::Tensor x = torch::randn({6, 4}), y = torch::randn({6, 2});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int i = 0; i < 4; ++i) {
    optimizer.zero_grad();
    torch::mse_loss(net->fc2(net->fc1(x).relu()), y).backward();
    optimizer.step();
  }
  nanny.close();
  // Four passes, four steps, each with the four gradients the pass produced.
  EXPECT_EQ(query(nanny.database_path(),
                  "SELECT step, count(*) FROM tensor_stats WHERE phase='gradient' GROUP BY step ORDER BY step"),
            (test::Rows{{"0", "4"}, {"1", "4"}, {"2", "4"}, {"3", "4"}}));
}


// watch() is process-wide: it starts again once closed (the test binary's watch tests share one
// process), and a second model while one is watched is named in a warning, not silently dropped.
TEST(Nanny, WatchStartsAgainAfterCloseAndWarnsAboutASecondModel) {
  struct Head : torch::nn::Module {
    Head() : head(register_module("head", torch::nn::Linear(4, 2))) {}
    torch::nn::Linear head;
  };
  ScratchDir first_dir, second_dir;
  torch::manual_seed(20);
  auto first_net = std::make_shared<Head>(), second_net = std::make_shared<Head>(), other_net = std::make_shared<Head>();
  const torch::Tensor x = torch::randn({6, 4});
  Nanny& first = watch(first_net, traced_every_step(first_dir));
  first_net->head(x).pow(2).mean().backward();
  first.close();

  Nanny& second = watch(second_net, traced_every_step(second_dir));
  EXPECT_NE(&second, &first);
  testing::internal::CaptureStderr();
  Nanny& again = watch(second_net, traced_every_step(first_dir));
  const std::string same_model_warnings = testing::internal::GetCapturedStderr();
  testing::internal::CaptureStderr();
  Nanny& other = watch(other_net, traced_every_step(first_dir));
  const std::string other_model_warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(&again, &second);
  EXPECT_EQ(&other, &second);
  EXPECT_EQ(same_model_warnings, "");
  EXPECT_NE(other_model_warnings.find("watch() already watches another model"), std::string::npos)
      << other_model_warnings;

  second_net->head(x).pow(2).mean().backward();
  second.close();
  EXPECT_EQ(second.database_path(), second_dir.file("metrics.db"));
  EXPECT_EQ(query(second.database_path(), "SELECT name FROM tensor_stats WHERE phase='gradient' ORDER BY name"),
            (test::Rows{{"head.bias"}, {"head.weight"}}));
}

// mpnanny's GradScaler keeps its scale in an fp32 tensor that it fills with 65536 (above fp16's
// 65504) and grows by fill_: its own bookkeeping, which the nanny must not judge as the model's
// values, on a healthy model that the scaler grows twice.
TEST(Scenario, TrainingWithMpnannysGradScalerRaisesNothing) {
  ScratchDir dir;
  torch::manual_seed(21);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({64, 16}), y = torch::randn({64, 8});
  GradScaler scaler({.growth_interval = 2});
  Options options = traced_every_step(dir);
  options.loss_scale = loss_scale_of(scaler);
  Nanny nanny(net, options);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int64_t step = 0; step < 5; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    scaler.scale(torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y)).backward();
    scaler.step(optimizer);
    scaler.update();
  }
  nanny.close();
  EXPECT_EQ(scaler.get_scale(), 65536.0 * 4);
  EXPECT_TRUE(nanny.alerts().empty()) << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM loss_scale WHERE skipped=0"), "5");
}

// An evaluation step under InferenceMode, then training steps: the nanny keeps copies of the
// weights for the update ratio, and copies made under InferenceMode would be inference tensors
// that the next step could not copy into. Later steps must be observed as usual, with no warning.
TEST(Scenario, AStepUnderInferenceModeLeavesTheNextStepsObserved) {
  ScratchDir dir;
  torch::manual_seed(22);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({8, 16}), y = torch::randn({8, 8});
  Nanny nanny(net, traced_every_step(dir));
  testing::internal::CaptureStderr();
  {
    c10::InferenceMode inference;
    auto guard = nanny.step(0);
    (void)net->fc2(torch::relu(net->fc1(x)));
  }
  int overflow_line = 0;
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int64_t step = 1; step <= 2; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    auto h = torch::exp(net->fc1(x) + 20); overflow_line = __LINE__;  // e^20 = 4.9e8
    torch::mse_loss(net->fc2(h / 1e8), y).backward();
    optimizer.step();
  }
  const bool active_before_close = nanny.active();
  nanny.close();
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(active_before_close);
  EXPECT_EQ(warnings, "");
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(query(nanny.database_path(), "SELECT DISTINCT step FROM alerts ORDER BY step"),
            (test::Rows{{"1"}, {"2"}}));
  EXPECT_EQ(query_value(nanny.database_path(),
                        "SELECT count(*) FROM tensor_stats WHERE phase='weight' AND update_ratio IS NOT NULL"),
            "8");  // four parameters, two training steps
}

// Gradients the stat kernel once returned empty stats for -- a sparse Embedding's, a complex
// parameter's, a parameter with no elements -- were reported as vanishing (norm 0) on every
// traced step. They are measured (sparse: the stored rows; complex: both parts) or left out.
TEST(Scenario, SparseComplexAndEmptyParametersAreMeasuredNotReportedAsVanishing) {
  struct Unusual : torch::nn::Module {
    Unusual()
        : embedding(register_module("embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(10, 8).sparse(true)))),
          rotation(register_parameter("rotation", torch::randn({4}, torch::kComplexFloat))),
          nothing(register_parameter("nothing", torch::zeros({4, 0}))) {}
    torch::nn::Embedding embedding;
    torch::Tensor rotation, nothing;
  };
  ScratchDir dir;
  torch::manual_seed(23);
  auto net = std::make_shared<Unusual>();
  const torch::Tensor tokens = torch::tensor({1, 3, 3, 7}, torch::kLong);
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 3, [&](int64_t) {
    return net->embedding(tokens).pow(2).mean() + net->rotation.abs().pow(2).sum() + net->nothing.sum();
  });
  nanny.close();
  EXPECT_TRUE(nanny.alerts().empty()) << listing(nanny.alerts());
  // Three distinct tokens, eight values each; four complex values, two parts each.
  EXPECT_EQ(query(nanny.database_path(),
                  "SELECT name, numel, norm > 0 FROM tensor_stats WHERE phase='gradient' AND step=0 ORDER BY name"),
            (test::Rows{{"embedding.weight", "24", "1"}, {"rotation", "8", "1"}}));
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE name='nothing'"), "0");
}

// A backward pass that another thread runs while the training loop begins and ends steps: its
// gradient hooks write the step's gradients while end_step reads and clears them. A race there
// corrupted the heap in about one run of three (and TSan reports it: SANITIZE=tsan). One thread
// only: two backward passes into the same parameters race inside LibTorch's AccumulateGrad.
TEST(Nanny, ABackwardPassOnAnotherThreadWhileStepsBeginAndEnd) {
  ScratchDir dir;
  torch::manual_seed(24);
  torch::nn::Linear layer(64, 64);
  Nanny nanny(layer, traced_every_step(dir));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> passes{0};
  std::thread backward_passes([&] {
    while (!stop.load()) {
      torch::log(torch::softmax(layer->forward(torch::randn({32, 64})), 1)).mean().backward();
      ++passes;
    }
  });
  for (int64_t step = 0; step < 600; ++step) {
    auto guard = nanny.step(step);
    std::this_thread::yield();
  }
  stop = true;
  backward_passes.join();
  nanny.flush();
  EXPECT_TRUE(nanny.active());
  EXPECT_GT(passes.load(), 0);
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM steps"), "600");
  nanny.close();
}

// watch()'s nanny is closed by an atexit handler, which ends its last step and reads the weights
// once more. exit() has destroyed the main thread's thread_locals by then: state the stat kernel
// or the op observer kept there must still be usable (it was freed memory, and glibc aborted).
TEST(Nanny, WatchStoresItsLastStepWhenTheProgramExits) {
  ScratchDir dir;
  const auto train_and_exit = [&] {
    mallopt(M_PERTURB, 0x5a);  // freed memory filled, so that using it shows
    torch::manual_seed(25);
    auto net = std::make_shared<Mlp>(16, 32, 8);
    watch(net, traced_every_step(dir));
    const torch::Tensor x = torch::randn({8, 16}), y = torch::randn({8, 8});
    torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
    for (int i = 0; i < 3; ++i) {
      optimizer.zero_grad();
      torch::mse_loss(net->fc2(torch::exp(net->fc1(x) * 1e3)), y).backward();  // INF: dense
      optimizer.step();
    }
    std::exit(0);
  };
  EXPECT_EXIT(train_and_exit(), testing::ExitedWithCode(0), "");
  const std::string database = dir.file("metrics.db");
  // Three backward passes end steps 0 to 2; step 3, open at exit, is ended by the handler.
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM steps"), "4");
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM tensor_stats WHERE step=3 AND phase='weight'"), "4");
  // ...counted in bins that are zero where a count starts (the child fills freed memory with 0x5a,
  // so counts made in freed bins come out wrong even where glibc does not notice the write).
  EXPECT_EQ(query_value(database,
                        "SELECT count(*) FROM tensor_stats t JOIN histograms h USING (run_id, step, seq) "
                        "WHERE t.step=3 AND t.phase='weight' AND (SELECT sum(value) FROM json_each(h.counts)) = "
                        "t.numel - t.zero_count - t.nan_count - t.inf_count"),
            "4");
}

// A user's library whose name begins like LibTorch's is the user's: a prefix match skipped every
// frame of libtorch_myops.so, and its alerts went to whoever called into it.
TEST(SourceLocator, LibTorchsLibrariesAreKnownByTheirNamesNotByAPrefix) {
  for (const char* library : {"/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13", "/opt/libtorch/lib/libtorch.so",
                              "libc10.so", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/libc-2.31.so",
                              "/lib64/ld-linux-x86-64.so.2", "libcaffe2_observers.so", "libmpnanny_runtime.so.0",
                              "libtorchvision.so"}) {
    EXPECT_TRUE(SourceLocator::is_library_module(library)) << library;
  }
  for (const char* library : {"/work/build/libtorch_myops.so", "libc10_extensions.so", "libtorch_ext.so",
                              "/home/me/libcustom.so", "/usr/bin/train", "libmodel-2.so"}) {
    EXPECT_FALSE(SourceLocator::is_library_module(library)) << library;
  }
}

// The source locator skips LibTorch's and the system's code by its paths and, without debug
// information, by its namespaces. User code in a folder named like a common one (ext/), or
// compiled without -g, is still the user's: the folder name once moved the alert to the caller's
// line, and a frame without debug information (LibTorch's at::exp, not inlined) was taken for
// the user's.
TEST(Scenario, UserCodeInAFolderNamedExtOrWithoutDebugInfoIsTheUsers) {
  ScratchDir dir;
  Nanny nanny(traced_every_step(dir));
  const torch::Tensor x = torch::ones({4, 4});
  int ext_line = 0;
  {
    auto guard = nanny.step(0);
    ext_line = test::overflow_in_a_folder_named_ext(x);
  }
  int call_line = 0;
  {
    auto guard = nanny.step(1);
    test::overflow_without_debug_info(x); call_line = __LINE__;
  }
  nanny.close();
  const std::vector<Alert> alerts = nanny.alerts();
  ASSERT_EQ(alerts.size(), 2u) << listing(alerts);
  EXPECT_EQ(alerts[0].type, AlertType::Overflow);
  const std::string ext_file = "attribution/ext/ExtFolder.cpp";
  EXPECT_TRUE(alerts[0].location.file.size() >= ext_file.size() &&
              alerts[0].location.file.compare(alerts[0].location.file.size() - ext_file.size(), ext_file.size(),
                                              ext_file) == 0)
      << alerts[0].location.file;
  EXPECT_EQ(alerts[0].location.line, ext_line);
  // Without debug information: the user's function by name only, or (where the binary's other
  // debug information covers the address, as in this test binary) the user's line that called it;
  // never LibTorch's at::exp.
  EXPECT_EQ(alerts[1].type, AlertType::Overflow);
  const SourceLocation& where = alerts[1].location;
  const bool by_name = where.line == 0 && where.function.rfind("mpnanny::test::overflow_without_debug_info", 0) == 0;
  const bool by_caller = where.line == call_line && where.file.find(kThisFile) != std::string::npos;
  EXPECT_TRUE(by_name || by_caller) << where.function << " at " << where.file << ":" << where.line;
}
}  // namespace
}  // namespace mpnanny
