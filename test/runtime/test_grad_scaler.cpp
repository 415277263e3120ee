// mpnanny::GradScaler against torch.amp.GradScaler's algorithm, on the CPU path (plain ATen).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "mpnanny/GradScaler.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

struct Fixture {
  at::Tensor weight = at::tensor({1.0f, 2.0f, 3.0f}).requires_grad_(true);
  at::Tensor bias = at::tensor({0.5f}).requires_grad_(true);
  torch::optim::SGD optimizer{std::vector<at::Tensor>{weight, bias}, torch::optim::SGDOptions(0.1)};

  // Gradients as backward would leave them for a loss scaled by `scale`: value * scale each.
  void set_scaled_grads(double value, double scale) {
    weight.mutable_grad() = at::full({3}, value * scale, at::kFloat);
    bias.mutable_grad() = at::full({1}, value * scale, at::kFloat);
  }
};

std::string message_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no exception)";
}

TEST(GradScaler, DefaultsArePyTorchs) {
  GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.get_growth_factor(), 2.0);
  EXPECT_EQ(scaler.get_backoff_factor(), 0.5);
  EXPECT_EQ(scaler.get_growth_interval(), 2000);
  EXPECT_TRUE(scaler.is_enabled());
  const at::Tensor loss = at::tensor(0.25f);
  EXPECT_EQ(scaler.scale(loss).item<float>(), 0.25f * 65536.0f);
}

// The reference sequence, worked by hand from _amp_update_scale_ with init 8, growth 2,
// backoff 0.5, interval 3: a clean step counts up; the third in a row doubles the scale and
// restarts the count; an inf/NaN step halves it and restarts the count.
TEST(GradScaler, ScaleSequenceMatchesPyTorchsAlgorithm) {
  Fixture f;
  GradScaler scaler({.init_scale = 8.0, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 3});
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> gradient = {1, 1, 1, inf, 1, nan, 1, 1, 1, 1};
  const std::vector<double> expected_scale = {8, 8, 16, 8, 8, 4, 4, 4, 8, 8};
  const std::vector<int64_t> expected_tracker = {1, 2, 0, 0, 1, 0, 1, 2, 0, 1};
  const std::vector<bool> expected_stepped = {true, true, true, false, true, false, true, true, true, true};
  for (size_t i = 0; i < gradient.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const double scale = scaler.get_scale();
    (void)scaler.scale(at::tensor(1.0f));
    f.set_scaled_grads(gradient[i], scale);
    EXPECT_EQ(scaler.step(f.optimizer), expected_stepped[i]);
    EXPECT_EQ(scaler.last_step_skipped(), !expected_stepped[i]);
    if (expected_stepped[i]) EXPECT_EQ(f.bias.grad().item<float>(), 1.0f) << "gradient not unscaled";
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), expected_scale[i]);
    EXPECT_EQ(scaler.get_growth_tracker(), expected_tracker[i]);
  }
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(GradScaler, GrowthStopsBelowInfinity) {
  GradScaler scaler({.init_scale = 3e38, .growth_interval = 1});
  Fixture f;
  (void)scaler.scale(at::tensor(1.0f));
  f.set_scaled_grads(0.0, 1.0);
  scaler.step(f.optimizer);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), static_cast<double>(3e38f));
  EXPECT_EQ(scaler.get_growth_tracker(), 0);
}

TEST(GradScaler, SkippedStepLeavesWeightsUnchanged) {
  Fixture f;
  GradScaler scaler;
  (void)scaler.scale(at::tensor(1.0f));
  const at::Tensor before = f.weight.detach().clone();
  f.set_scaled_grads(1.0, 65536.0);
  f.weight.mutable_grad()[1] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.step(f.optimizer));
  EXPECT_TRUE(at::equal(f.weight.detach(), before));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 32768.0);

  // The next clean step does move them, by lr * the unscaled gradient.
  (void)scaler.scale(at::tensor(1.0f));
  f.set_scaled_grads(1.0, 32768.0);
  EXPECT_TRUE(scaler.step(f.optimizer));
  EXPECT_TRUE(at::allclose(f.weight.detach(), before - 0.1));
}

TEST(GradScaler, BackwardThroughScaledLossUnscalesExactly) {
  Fixture f;
  GradScaler scaler;
  const at::Tensor x = at::tensor({0.5f, -1.0f, 2.0f});
  const at::Tensor loss = (f.weight * x).sum() + f.bias.sum();
  scaler.scale(loss).backward();
  EXPECT_EQ(f.bias.grad().item<float>(), 65536.0f);
  scaler.unscale_(f.optimizer);
  EXPECT_TRUE(at::equal(f.weight.grad(), x));
  EXPECT_TRUE(scaler.step(f.optimizer));
  scaler.update();
  EXPECT_EQ(scaler.get_growth_tracker(), 1);
}

TEST(GradScaler, UnscaleTwiceBeforeUpdateIsAnError) {
  Fixture f;
  GradScaler scaler;
  (void)scaler.scale(at::tensor(1.0f));
  f.set_scaled_grads(1.0, 65536.0);
  scaler.unscale_(f.optimizer);
  EXPECT_EQ(message_of([&] { scaler.unscale_(f.optimizer); }),
            "unscale_() has already been called on this optimizer since the last update().");
  // step() after an explicit unscale_ does not unscale again.
  EXPECT_TRUE(scaler.step(f.optimizer));
  EXPECT_EQ(f.bias.grad().item<float>(), 1.0f);
  EXPECT_EQ(message_of([&] { scaler.unscale_(f.optimizer); }), "unscale_() is being called after step().");
  EXPECT_EQ(message_of([&] { scaler.step(f.optimizer); }), "step() has already been called since the last update().");
  scaler.update();
  f.set_scaled_grads(1.0, 65536.0);
  EXPECT_NO_THROW(scaler.unscale_(f.optimizer));
}

TEST(GradScaler, UnscalingFp16GradientsIsAnError) {
  at::Tensor weight = at::ones({2}, at::kHalf).requires_grad_(true);
  torch::optim::SGD optimizer{std::vector<at::Tensor>{weight}, torch::optim::SGDOptions(0.1)};
  weight.mutable_grad() = at::ones({2}, at::kHalf);
  GradScaler scaler;
  (void)scaler.scale(at::tensor(1.0f));
  EXPECT_EQ(message_of([&] { scaler.unscale_(optimizer); }), "Attempting to unscale FP16 gradients.");
}

TEST(GradScaler, Bf16GradientsAreUnscaledAndChecked) {
  at::Tensor weight = at::ones({4}, at::kBFloat16).requires_grad_(true);
  torch::optim::SGD optimizer{std::vector<at::Tensor>{weight}, torch::optim::SGDOptions(0.1)};
  GradScaler scaler;
  (void)scaler.scale(at::tensor(1.0f));
  weight.mutable_grad() = at::full({4}, 3.0 * 65536.0, at::kBFloat16);
  scaler.unscale_(optimizer);
  EXPECT_EQ(weight.grad().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(weight.grad(), at::full({4}, 3.0, at::kBFloat16)));
  EXPECT_TRUE(scaler.step(optimizer));
  scaler.update();
  weight.mutable_grad() = at::full({4}, 3.0 * 65536.0, at::kBFloat16);
  weight.mutable_grad()[2] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.step(optimizer));
}

TEST(GradScaler, StateSaveLoadRoundTrip) {
  GradScaler scaler({.init_scale = 8.0, .growth_interval = 3});
  Fixture f;
  for (double gradient : {1.0, std::numeric_limits<double>::infinity(), 1.0, 1.0}) {
    const double scale = scaler.get_scale();
    (void)scaler.scale(at::tensor(1.0f));
    f.set_scaled_grads(gradient, scale);
    scaler.step(f.optimizer);
    scaler.update();
  }
  const auto state = scaler.state_dict();
  EXPECT_EQ(state.at("scale"), 4.0);
  EXPECT_EQ(state.at("_growth_tracker"), 2.0);
  EXPECT_EQ(state.at("growth_interval"), 3.0);

  // Loaded before the first scale() (as a resumed run does) and after it: same state, and the
  // next clean step grows both the same way.
  GradScaler fresh;
  fresh.load_state_dict(state);
  EXPECT_EQ(fresh.state_dict(), state);
  GradScaler used;
  (void)used.scale(at::tensor(1.0f));
  used.load_state_dict(state);
  EXPECT_EQ(used.state_dict(), state);
  for (GradScaler* s : {&scaler, &fresh, &used}) {
    Fixture g;
    (void)s->scale(at::tensor(1.0f));
    g.set_scaled_grads(1.0, 4.0);
    s->step(g.optimizer);
    s->update();
    EXPECT_EQ(s->get_scale(), 8.0);
    EXPECT_EQ(s->get_growth_tracker(), 0);
  }

  GradScaler disabled({.enabled = false});
  EXPECT_TRUE(disabled.state_dict().empty());
  EXPECT_EQ(message_of([&] { fresh.load_state_dict(disabled.state_dict()); }),
            "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
}

TEST(GradScaler, DisabledPassesThrough) {
  GradScaler scaler({.enabled = false});
  Fixture f;
  const at::Tensor loss = at::tensor(2.0f);
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  EXPECT_EQ(scaler.get_scale(), 1.0);
  f.set_scaled_grads(1.0, 1.0);
  EXPECT_TRUE(scaler.step(f.optimizer));
  EXPECT_NO_THROW(scaler.update());
}

TEST(GradScaler, IsTheNannysLossScaleSource) {
  GradScaler scaler({.init_scale = 1024.0});
  Options options;
  options.loss_scale = loss_scale_of(scaler);
  EXPECT_EQ(options.loss_scale(), 1024.0);
  Fixture f;
  (void)scaler.scale(at::tensor(1.0f));
  f.set_scaled_grads(std::numeric_limits<double>::quiet_NaN(), 1.0);
  scaler.step(f.optimizer);
  scaler.update();
  EXPECT_EQ(options.loss_scale(), 512.0);  // the decrease the nanny records as a skipped step
}

TEST(GradScaler, InvalidFactorsAreRejected) {
  EXPECT_THROW(GradScaler({.growth_factor = 1.0}), std::invalid_argument);
  EXPECT_THROW(GradScaler({.backoff_factor = 1.0}), std::invalid_argument);
  EXPECT_THROW(GradScaler({.growth_interval = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace mpnanny
