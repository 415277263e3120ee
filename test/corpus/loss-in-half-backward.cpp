// A loss passed straight to backward(), or returned by a *loss* function, in fp16. A mean of
// unsquared terms is not a hazard (CUDA's mean adds and divides in float); a square is.
#include <torch/torch.h>

void fit_half(torch::Tensor pred, torch::Tensor y) {
  auto p = pred.to(torch::kHalf);
  (p - y).abs().mean().backward(); // ok: mpnanny-loss-in-half // expect: mpnanny-missing-grad-scaler
  (p - y).pow(2).mean().backward(); // expect: mpnanny-loss-in-half, mpnanny-missing-grad-scaler
  (p.to(torch::kFloat) - y).abs().mean().backward(); // ok: mpnanny-loss-in-half // expect: mpnanny-missing-grad-scaler
}

torch::Tensor huber_like_loss(torch::Tensor pred, torch::Tensor y) {
  auto p = pred.to(torch::kHalf);
  return (p - y).abs().mean(); // ok: mpnanny-loss-in-half
}

torch::Tensor squared_loss(torch::Tensor pred, torch::Tensor y) {
  auto p = pred.to(torch::kHalf);
  return (p - y).square().mean(); // expect: mpnanny-loss-in-half
}

torch::Tensor huber_like_loss32(torch::Tensor pred, torch::Tensor y) {
  auto p = pred.to(torch::kHalf).to(torch::kFloat);
  return (p - y).abs().mean(); // ok: mpnanny-loss-in-half
}

void fit_fp32(torch::Tensor pred, torch::Tensor y) {
  (pred - y).abs().mean().backward(); // ok: mpnanny-loss-in-half
}
