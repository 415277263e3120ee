// RUN: %mpnanny_check --checks='-*,mpnanny-loss-in-half' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-loss-in-half' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

// A model converted to fp16: built-in and hand-written losses run in fp16.
struct RegressorImpl : torch::nn::Module {
  torch::nn::Linear head{4, 1};
  torch::nn::MSELoss criterion;
  torch::Tensor forward(torch::Tensor x) { return head(x); }
  torch::Tensor compute_loss(torch::Tensor x, torch::Tensor y) {
    auto pred = forward(x);
    auto l1 = F::mse_loss(pred, y);
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::functional::mse_loss in fp16 squares the errors in fp16: an error above 255.9 {{.*}} [mpnanny-loss-in-half]
    auto l2 = criterion(pred, y);
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::MSELoss in fp16{{.*}} [mpnanny-loss-in-half]
    auto l3 = F::cross_entropy(pred, y);
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::functional::cross_entropy in fp16 computes log-probabilities and the loss in fp16{{.*}} [mpnanny-loss-in-half]
    auto loss = (pred - y).pow(2).mean();
// CHECK: :[[@LINE-1]]:10: warning: hand-written loss 'loss' is computed in fp16: an error above 255.9 squares past 65504 {{.*}} [mpnanny-loss-in-half]
    (pred - y).abs().mean().backward();
// CHECK: :[[@LINE-1]]:5: warning: hand-written loss passed to backward() is computed in fp16{{.*}} [mpnanny-loss-in-half]
    torch::Tensor total_loss;
    total_loss = ((pred - y) * (pred - y)).sum() / 4;
// CHECK: :[[@LINE-1]]:16: warning: hand-written loss 'total_loss' is computed in fp16{{.*}} [mpnanny-loss-in-half]

    // Safe: upcast before the loss; a built-in loss wrapped in arithmetic is judged once, at the call.
    auto s1 = F::mse_loss(pred.to(torch::kFloat), y.to(torch::kFloat));
    auto s2 = F::cross_entropy(pred.to(torch::kFloat), y);
    auto safe_loss = (pred.to(torch::kFloat) - y).pow(2).mean();
    auto scaled_loss = F::l1_loss(pred.to(torch::kFloat), y) * 0.5;
    auto error = (pred - y).pow(2).mean();
    auto accuracy_loss_free = (pred.argmax(-1) == y).sum();
    return l1 + l2 + l3 + loss + total_loss + s1 + s2 + safe_loss + scaled_loss + error +
           accuracy_loss_free;
  }
};
TORCH_MODULE(Regressor);

void train_half() {
  Regressor model;
  model->to(torch::kHalf);
}

// bf16: the built-in losses are documentation-only notes; hand-written losses hold their range;
// binary_cross_entropy loses probabilities within 2e-3 of 1.
torch::Tensor bf16_losses(torch::Tensor logits, torch::Tensor y) {
  auto h = logits.to(torch::kBFloat16);
  auto ce = F::cross_entropy(h, y);
  auto loss = (h - y).pow(2).mean();
  auto bce = torch::binary_cross_entropy(torch::sigmoid(h), y);
// CHECK: :[[@LINE-1]]:14: warning: torch::binary_cross_entropy in bf16: a probability within 2e-3 of 1 rounds to 1 {{.*}} [mpnanny-loss-in-half]
  return ce + loss + bce;
}

// Under autocast the losses run in fp32; binary_cross_entropy is refused.
torch::Tensor autocast_step(torch::Tensor logits, torch::Tensor target) {
  at::autocast::set_enabled(true);
  auto banned = torch::binary_cross_entropy(torch::sigmoid(logits), target);
// CHECK: :[[@LINE-1]]:17: warning: torch::binary_cross_entropy is refused under autocast (autocast-fp16): PyTorch raises on CUDA{{.*}} [mpnanny-loss-in-half]
  torch::nn::BCELoss bce_module;
  auto banned2 = bce_module(torch::sigmoid(logits), target);
// CHECK: :[[@LINE-1]]:18: warning: torch::nn::BCELoss is refused under autocast {{.*}} [mpnanny-loss-in-half]
  auto safe = torch::binary_cross_entropy_with_logits(logits, target);
  auto ce = F::cross_entropy(logits, target);
  auto mse = F::mse_loss(logits, target);
  auto loss = (logits - target).pow(2).mean();
  at::autocast::set_enabled(false);
  return banned + banned2 + safe + ce + mse + loss;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_only(torch::Tensor p, torch::Tensor y) {
  auto loss = torch::binary_cross_entropy(p, y) + (p - y).pow(2).mean();
  return loss;
}

// A sign in front of an upcast loss keeps it fp32.
torch::Tensor signed_losses(torch::Tensor ratio, torch::Tensor adv) {
  auto r = ratio.to(torch::kHalf);
  auto policy_loss = -(r * adv).mean();
// CHECK: :[[@LINE-1]]:8: warning: hand-written loss 'policy_loss' is computed in fp16{{.*}} [mpnanny-loss-in-half]
  auto rf = r.to(torch::kFloat);
  auto policy_loss32 = -(rf * adv).mean();
  return policy_loss + policy_loss32;
}
