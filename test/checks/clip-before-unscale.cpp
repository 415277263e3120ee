// RUN: %mpnanny_check --checks='-*,mpnanny-clip-before-unscale' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-clip-before-unscale' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

torch::Tensor forward_loss(Net net, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  return loss;
}

// Lightning#9330: clipping the scaled gradients.
void clip_scaled(Net net, torch::optim::Adam &opt, mpnanny::GradScaler &scaler, torch::Tensor x,
                 torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
// CHECK: :[[@LINE-1]]:3: warning: torch::nn::utils::clip_grad_norm_ clips gradients that are still multiplied by the loss scale (65536 by default): {{.*}} [mpnanny-clip-before-unscale]
// CHECK: :[[@LINE-2]]:3: note: unscale first: scaler.unscale_(optimizer)
  scaler.step(opt);
  scaler.update();
}

// A hand-rolled static scale, clipped before the division.
void clip_hand_scaled(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y) {
  const float loss_scale = 1024.0f;
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  (loss * loss_scale).backward();
  torch::nn::utils::clip_grad_value_(net->parameters(), 5.0);
// CHECK: :[[@LINE-1]]:3: warning: torch::nn::utils::clip_grad_value_ clips gradients that are still multiplied by the loss scale (1024 here): {{.*}} [mpnanny-clip-before-unscale]
  for (auto &p : net->parameters())
    p.grad().div_(loss_scale);
  opt.step();
}

// A static scale the code does not show as a number: the message quotes the default.
void clip_param_scaled(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y,
                       double loss_scale) {
  net->to(torch::kHalf);
  auto scaled = torch::mse_loss(net(x), y).mul(loss_scale);
  scaled.backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
// CHECK: :[[@LINE-1]]:3: warning: torch::nn::utils::clip_grad_norm_ clips gradients that are still multiplied by the loss scale (65536 by default): {{.*}} [mpnanny-clip-before-unscale]
  opt.step();
}

// The literal scale, through a local product.
void clip_literal_scaled(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto scaled = torch::mse_loss(net(x), y) * 128.0;
  scaled.backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
// CHECK: :[[@LINE-1]]:3: warning: torch::nn::utils::clip_grad_norm_ clips gradients that are still multiplied by the loss scale (128 here): {{.*}} [mpnanny-clip-before-unscale]
  opt.step();
}

// In the training loop; unscaling after the clip does not help.
void clip_in_loop(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  mpnanny::GradScaler scaler;
  for (int step = 0; step < 100; ++step) {
    auto loss = forward_loss(net, x, y);
    scaler.scale(loss).backward();
    torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
// CHECK: :[[@LINE-1]]:5: warning: torch::nn::utils::clip_grad_norm_ clips gradients {{.*}} [mpnanny-clip-before-unscale]
    scaler.unscale_(opt);
    scaler.step(opt);
    scaler.update();
  }
}

// Safe: unscale_ first, as PyTorch documents.
void unscale_then_clip(Net net, torch::optim::Adam &opt, torch::Tensor x, torch::Tensor y) {
  mpnanny::GradScaler scaler;
  for (int step = 0; step < 100; ++step) {
    auto loss = forward_loss(net, x, y);
    scaler.scale(loss).backward();
    scaler.unscale_(opt);
    torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
    scaler.step(opt);
    scaler.update();
  }
}

// Safe: the gradients are divided by the scale before the clip.
void divide_then_clip(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y) {
  float scale = 65536.0f;
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x), y);
  (loss * scale).backward();
  for (auto &p : net->parameters())
    p.mutable_grad() /= scale;
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
  opt.step();
}

// Safe: a helper that unscales, by another name.
void inverse_scale_grads(Net net, double inv_scale) {
  for (auto &p : net->parameters())
    p.grad().mul_(inv_scale);
}
void helper_then_clip(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y,
                      double scale) {
  auto loss = forward_loss(net, x, y);
  (loss * scale).backward();
  inverse_scale_grads(net, 1.0 / scale);
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
  opt.step();
}

// Safe: no scaling at all (bf16 autocast), so nothing to unscale.
void bf16_clip(Net net, torch::optim::AdamW &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_cpu_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  loss.backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
  opt.step();
}

// Plain fp32 code: never reported, even with a scale.
void fp32_clip(Net net, torch::optim::SGD &opt, torch::Tensor x, torch::Tensor y) {
  auto loss = torch::mse_loss(net(x), y);
  (loss * 128.0).backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
  opt.step();
}
