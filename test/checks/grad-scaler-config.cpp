// RUN: %mpnanny_check --checks='-*,mpnanny-grad-scaler-config' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-grad-scaler-config' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

// mpnanny::GradScaler options out of bounds.
void scaler_options() {
  at::autocast::set_enabled(true);
  mpnanny::GradScaler a(mpnanny::GradScalerOptions().growth_factor(1.0).backoff_factor(0.5));
// CHECK: :[[@LINE-1]]:68: warning: loss scaler growth factor 1 is not above 1: after a backoff the scale never grows back{{.*}} [mpnanny-grad-scaler-config]
// CHECK: :[[@LINE-2]]:68: note: use PyTorch's GradScaler defaults: init_scale 65536, growth_factor 2.0, backoff_factor 0.5, growth_interval 2000
  mpnanny::GradScaler b(mpnanny::GradScalerOptions().backoff_factor(2.0).growth_interval(10));
// CHECK: :[[@LINE-1]]:69: warning: loss scaler backoff factor 2 is not below 1{{.*}} [mpnanny-grad-scaler-config]
// CHECK: :[[@LINE-2]]:90: warning: loss scaler growth interval 10 is below 100 steps{{.*}} [mpnanny-grad-scaler-config]
  mpnanny::GradScaler c(1e9);
// CHECK: :[[@LINE-1]]:25: warning: loss scaler init scale 1e9 is above 2^24 (16777216): every scaled fp16 gradient above 6.55e-5 overflows 65504{{.*}} [mpnanny-grad-scaler-config]
  mpnanny::GradScaler d(0.5, 2.0, 0.0);
// CHECK: :[[@LINE-1]]:25: warning: loss scaler init scale 0.5 is below 1{{.*}} [mpnanny-grad-scaler-config]
// CHECK: :[[@LINE-2]]:35: warning: loss scaler backoff factor 0 is not above 0{{.*}} [mpnanny-grad-scaler-config]
  // Safe: PyTorch's defaults, and other sane values.
  mpnanny::GradScaler e;
  mpnanny::GradScaler f(mpnanny::GradScalerOptions().init_scale(1024.0).growth_interval(1000));
  mpnanny::GradScaler g(65536.0, 2.0, 0.5, 2000);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
}

// A hand-rolled scaler (pytorch#44710: LibTorch has none).
struct LossScaler {
  float scale = 65536.0f;
  float growth_factor = 1.0f;
// CHECK: :[[@LINE-1]]:25: warning: loss scaler growth factor 1 is not above 1{{.*}} [mpnanny-grad-scaler-config]
  float backoff_factor = 0.5f;
  int growth_interval = 2000;
};

struct StaticScaler {
  double init_scale;
  double growth_factor;
};

void hand_rolled() {
  const double kInitScale = 2e8;
// CHECK: :[[@LINE-1]]:29: warning: loss scaler init scale 2e8 is above 2^24 {{.*}} [mpnanny-grad-scaler-config]
  StaticScaler s{1024.0, 0.9};
// CHECK: :[[@LINE-1]]:26: warning: loss scaler growth factor 0.9 is not above 1{{.*}} [mpnanny-grad-scaler-config]
  StaticScaler t{kInitScale, 2.0};
  LossScaler u;
  u.growth_interval = 50;
// CHECK: :[[@LINE-1]]:23: warning: loss scaler growth interval 50 is below 100 steps{{.*}} [mpnanny-grad-scaler-config]
  u.growth_interval = 500;
  double backoff_factor = 0.25;
}

// A static loss scale above 65504 in an fp16 loss is inf.
void static_scale(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  (loss * 131072.0).backward();
// CHECK: :[[@LINE-1]]:11: warning: static loss scale 131072 multiplied into an fp16 loss is above fp16's largest finite value 65504{{.*}} [mpnanny-grad-scaler-config]
// CHECK: :[[@LINE-2]]:11: note: multiply in fp32 (loss.to(torch::kFloat) * scale)
  const float loss_scale = 1e6f;
  auto scaled = loss * loss_scale;
// CHECK: :[[@LINE-1]]:24: warning: static loss scale 1000000 multiplied into an fp16 loss{{.*}} [mpnanny-grad-scaler-config]
  scaled.backward();
  // Safe: within fp16's range, or multiplied in fp32.
  (loss * 32768.0).backward();
  (loss.to(torch::kFloat) * 131072.0).backward();
  opt.step();
}

// bf16 holds 131072 * loss: nothing to report.
void static_scale_bf16(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kBFloat16);
  auto loss = torch::mse_loss(net(x), y);
  (loss * 131072.0).backward();
}

// pytorch#74739: unscaling fp16 gradients raises.
void unscale_half_model(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  mpnanny::GradScaler scaler;
  auto loss = torch::mse_loss(net(x), y);
  scaler.scale(loss).backward();
  scaler.unscale_(opt);
// CHECK: :[[@LINE-1]]:10: warning: mpnanny::GradScaler::unscale_ unscales the gradients of fp16 parameters{{.*}} [mpnanny-grad-scaler-config]
// CHECK: :[[@LINE-7]]:3: note: fp16 context: the model 'net' is converted to fp16 here
  scaler.step(opt);
  scaler.update();
}

void step_half_model(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto opt = std::make_shared<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1));
  mpnanny::GradScaler scaler;
  scaler.scale(torch::mse_loss(net(x), y)).backward();
  scaler.step(*opt);
// CHECK: :[[@LINE-1]]:10: warning: mpnanny::GradScaler::step unscales the gradients of fp16 parameters{{.*}} [mpnanny-grad-scaler-config]
  scaler.update();
}

// Safe: fp32 parameters under autocast, the way GradScaler is meant to be used.
void unscale_autocast(Net net, torch::Tensor x, torch::Tensor y) {
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  mpnanny::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.unscale_(opt);
  scaler.step(opt);
  scaler.update();
}
