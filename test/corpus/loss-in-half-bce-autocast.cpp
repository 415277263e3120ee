// binary_cross_entropy under autocast: PyTorch raises on CUDA. Feed logits to
// binary_cross_entropy_with_logits (BCEWithLogitsLoss) instead of sigmoid + BCE.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

torch::Tensor discriminator_loss(torch::Tensor logits, torch::Tensor labels) {
  at::autocast::set_enabled(true);
  auto probs = torch::sigmoid(logits);
  auto a = torch::binary_cross_entropy(probs, labels); // expect: mpnanny-loss-in-half
  auto b = F::binary_cross_entropy(probs, labels); // expect: mpnanny-loss-in-half
  torch::nn::BCELoss bce;
  auto c = bce(probs, labels); // expect: mpnanny-loss-in-half
  auto d = torch::binary_cross_entropy_with_logits(logits, labels); // ok: mpnanny-loss-in-half
  torch::nn::BCEWithLogitsLoss bce_logits;
  auto e = bce_logits(logits, labels); // ok: mpnanny-loss-in-half
  auto f = F::binary_cross_entropy_with_logits(logits, labels); // ok: mpnanny-loss-in-half
  at::autocast::set_enabled(false);
  auto g = torch::binary_cross_entropy(probs, labels); // ok: mpnanny-loss-in-half
  return a + b + c + d + e + f + g;
}
