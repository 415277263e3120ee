// RUN: %mpnanny_check --checks='-*,mpnanny-loss-in-half' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-loss-in-half' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

// A model converted to fp16: built-in and hand-written losses run in fp16. The kernels add in
// float, so only what is stored in fp16 and leaves its range is reported: a square, a sum
// reduction, cross_entropy's label smoothing (a sum over the classes).
struct RegressorImpl : torch::nn::Module {
  torch::nn::Linear head{4, 1};
  torch::nn::MSELoss criterion;
  torch::Tensor forward(torch::Tensor x) { return head(x); }
  torch::Tensor compute_loss(torch::Tensor x, torch::Tensor y) {
    auto pred = forward(x);
    auto l1 = F::mse_loss(pred, y);
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::functional::mse_loss in fp16 squares the errors in fp16 (the kernel computes diff * diff in the input type): an error above 255.9 {{.*}} [mpnanny-loss-in-half]
    auto l2 = criterion(pred, y);
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::MSELoss in fp16{{.*}} [mpnanny-loss-in-half]
    auto l3 = F::cross_entropy(pred, y, F::CrossEntropyFuncOptions().label_smoothing(0.1));
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::functional::cross_entropy in fp16 with a sum reduction or label smoothing stores a sum in fp16{{.*}} [mpnanny-loss-in-half]
    auto l4 = F::nll_loss(pred, y, F::NLLLossFuncOptions().reduction(torch::kSum));
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::functional::nll_loss in fp16 with a sum reduction stores the total in fp16{{.*}} [mpnanny-loss-in-half]
    auto l5 = torch::nll_loss(pred, y, {}, at::Reduction::Sum);
// CHECK: :[[@LINE-1]]:15: warning: torch::nll_loss in fp16 with a sum reduction{{.*}} [mpnanny-loss-in-half]
    auto l6 = F::l1_loss(pred, y, F::L1LossFuncOptions().reduction(torch::kSum));
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::functional::l1_loss in fp16 with a sum reduction stores the total in fp16{{.*}} [mpnanny-loss-in-half]
    auto loss = (pred - y).pow(2).mean();
// CHECK: :[[@LINE-1]]:10: warning: hand-written loss 'loss' is computed in fp16: its errors are squared in fp16, and an error above 255.9 squares past 65504 to inf; {{.*}} [mpnanny-loss-in-half]
    torch::Tensor total_loss;
    total_loss = ((pred - y) * (pred - y)).sum() / 4;
// CHECK: :[[@LINE-1]]:16: warning: hand-written loss 'total_loss' is computed in fp16: its errors are squared in fp16, {{.*}}, and sum() stores its total in fp16{{.*}} [mpnanny-loss-in-half]
    auto abs_loss = (pred - y).abs().sum();
// CHECK: :[[@LINE-1]]:10: warning: hand-written loss 'abs_loss' is computed in fp16: sum() stores its total in fp16 (it adds in float), which is inf above 65504{{.*}} [mpnanny-loss-in-half]

    // Not hazards in fp16: the kernels add in float and divide before rounding, the terms
    // fit, and log-probabilities do not flush (nll_loss(log_softmax(x)) is the stable idiom).
    auto ce = F::cross_entropy(pred, y);
    auto ce_no_smoothing = F::cross_entropy(pred, y, F::CrossEntropyFuncOptions().label_smoothing(0.0));
    auto nll = F::nll_loss(torch::log_softmax(pred, 1), y);
    auto l1_mean = F::l1_loss(pred, y);
    auto bce_logits = torch::binary_cross_entropy_with_logits(pred, y);
    (pred - y).abs().mean().backward();

    // Safe: upcast before the loss; a built-in loss wrapped in arithmetic is judged once, at the call.
    auto s1 = F::mse_loss(pred.to(torch::kFloat), y.to(torch::kFloat));
    auto s2 = F::cross_entropy(pred.to(torch::kFloat), y);
    auto safe_loss = (pred.to(torch::kFloat) - y).pow(2).mean();
    auto scaled_loss = F::l1_loss(pred.to(torch::kFloat), y) * 0.5;
    auto error = (pred - y).pow(2).mean();
    auto accuracy_loss_free = (pred.argmax(-1) == y).sum();
    auto s3 = F::nll_loss(pred.to(torch::kFloat), y, F::NLLLossFuncOptions().reduction(torch::kSum));
    return l1 + l2 + l3 + l4 + l5 + l6 + loss + total_loss + abs_loss + ce + ce_no_smoothing +
           nll + l1_mean + bce_logits + s1 + s2 + s3 + safe_loss + scaled_loss + error + accuracy_loss_free;
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

// A sign in front of a loss keeps its format: a squared one in fp16 is reported, a mean of
// unsquared fp16 terms is not (the mean adds in float), nor anything upcast.
torch::Tensor signed_losses(torch::Tensor ratio, torch::Tensor adv) {
  auto r = ratio.to(torch::kHalf);
  auto policy_loss = -(r * adv).mean();
  auto squared_loss = -(r * r).mean();
// CHECK: :[[@LINE-1]]:8: warning: hand-written loss 'squared_loss' is computed in fp16: its errors are squared{{.*}} [mpnanny-loss-in-half]
  auto rf = r.to(torch::kFloat);
  auto policy_loss32 = -(rf * adv).mean();
  auto squared_loss32 = -(rf * rf).mean();
  return policy_loss + squared_loss + policy_loss32 + squared_loss32;
}
