// RUN: %mpnanny_check --checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <map>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

// A model converted to half: the loss and every gradient are fp16.
void half_unscaled(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  loss.backward();
// CHECK: :[[@LINE-1]]:8: warning: Tensor::backward() on a loss whose forward ran in fp16 with no loss scaling: gradients below 2.98e-8 (half of fp16's smallest subnormal, 5.96e-8) flush to 0{{.*}} [mpnanny-missing-grad-scaler]
// CHECK: :[[@LINE-2]]:8: note: scale the loss and unscale before the step: mpnanny::GradScaler
}

void half_autograd_backward(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  torch::autograd::backward({loss});
// CHECK: :[[@LINE-1]]:3: warning: torch::autograd::backward() on a loss whose forward ran in fp16 {{.*}} [mpnanny-missing-grad-scaler]
}

// Dividing by the accumulation steps is no scaling.
void half_accumulation(Net net, torch::Tensor x, torch::Tensor y, int64_t steps) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  (loss / steps).backward();
// CHECK: :[[@LINE-1]]:18: warning: Tensor::backward() on a loss whose forward ran in fp16 {{.*}} [mpnanny-missing-grad-scaler]
}

// fp16 autocast, left before backward as recommended, but with no scaler.
void autocast_unscaled(Net net, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  loss.backward();
// CHECK: :[[@LINE-1]]:8: warning: Tensor::backward() on a loss whose forward ran in autocast-fp16 with no loss scaling{{.*}} [mpnanny-missing-grad-scaler]
// CHECK: :[[@LINE-6]]:3: note: autocast-fp16 context: autocast is enabled here
}

// The loss is computed after autocast is left, but the forward ran in fp16.
void autocast_loss_outside(Net net, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto out = net(x);
  at::autocast::set_enabled(false);
  auto loss = torch::mse_loss(out.to(torch::kFloat), y);
  loss.backward();
// CHECK: :[[@LINE-1]]:8: warning: Tensor::backward() on a loss whose forward ran in autocast-fp16 with no loss scaling{{.*}} [mpnanny-missing-grad-scaler]
}

// Scaled, but backward still inside the autocast region.
void backward_inside_autocast(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  mpnanny::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  scaler.scale(loss).backward();
// CHECK: :[[@LINE-1]]:22: warning: Tensor::backward() runs while autocast-fp16 is still enabled: PyTorch recommends leaving autocast before backward{{.*}} [mpnanny-missing-grad-scaler]
// CHECK: :[[@LINE-2]]:22: note: call at::autocast::set_enabled(false) and at::autocast::clear_cache() after the loss is computed and before backward()
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.step(opt);
  scaler.update();
}

// Safe: every loss below is scaled before backward.
void half_scaled_by_scaler(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  mpnanny::GradScaler scaler;
  auto loss = torch::mse_loss(net(x), y);
  scaler.scale(loss).backward();
  scaler.step(opt);
  scaler.update();
}

void half_scaled_by_hand(Net net, torch::Tensor x, torch::Tensor y, float loss_scale) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  (loss * loss_scale).backward();
  auto scaled = loss * loss_scale;
  scaled.backward();
  (loss * 1024.0).backward();
  loss.mul(loss_scale).backward();
}

struct HandScaler {
  float scale = 65536.0f;
};

void half_rescaled_local(Net net, torch::Tensor x, torch::Tensor y, HandScaler &scaler) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  loss *= scaler.scale;
  loss.backward();
  auto other = torch::mse_loss(net(x), y);
  other = other * scaler.scale;
  other.backward();
}

void half_seeded(Net net, torch::Tensor x, torch::Tensor y, torch::Tensor scale_seed) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  loss.backward(scale_seed);
}

void autocast_scaled(Net net, torch::Tensor x, torch::Tensor y) {
  mpnanny::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  torch::autograd::backward({scaler.scale(loss)});
}

// bf16 has fp32's range: no loss scaling needed.
void bf16_model(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kBFloat16);
  auto loss = torch::mse_loss(net(x), y);
  loss.backward();
}

// A loss handed in by the caller may have been scaled there.
void backward_of(torch::Tensor loss) { loss.backward(); }
void half_caller(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  backward_of(torch::mse_loss(net(x), y) * 4096.0);
}

// The same for a loss read from where other code stored it: a global, a table of named
// tensors (directly or through a reference). A local computed here is still judged.
std::map<std::string, torch::Tensor> stored_tensors;
torch::Tensor last_loss;
void half_backward_of_stored(Net net, torch::Tensor x, torch::Tensor y, std::string name) {
  net->to(torch::kHalf);
  auto &stored = stored_tensors[name];
  stored.backward();
  stored_tensors[name].backward();
  last_loss.backward();
  auto loss = torch::mse_loss(net(x), y);
  loss.backward();
// CHECK: :[[@LINE-1]]:8: warning: Tensor::backward() on a loss whose forward ran in fp16 {{.*}} [mpnanny-missing-grad-scaler]
}

// Plain fp32 code: never reported.
void fp32_training(Net net, torch::Tensor x, torch::Tensor y) {
  auto loss = torch::mse_loss(net(x), y);
  loss.backward();
}
