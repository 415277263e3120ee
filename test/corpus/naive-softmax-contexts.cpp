// bf16, fp32 and autocast: exp overflows only above 88.72 there, as in fp32.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor bf16_probs(torch::Tensor x) {
  auto b = x.to(torch::kBFloat16);
  auto p = torch::exp(b) / torch::exp(b).sum(-1, true); // ok: mpnanny-naive-softmax
  return p;
}

torch::Tensor fp32_probs(torch::Tensor x) {
  auto e = x.exp();
  auto p = e / e.sum(-1, true); // ok: mpnanny-naive-softmax
  return p;
}

torch::Tensor autocast_probs(torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto e = x.exp();
  auto p = e / e.sum(-1, true); // ok: mpnanny-naive-softmax
  at::autocast::set_enabled(false);
  return p;
}

torch::Tensor half_probs(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto p = torch::exp(h) / torch::exp(h).sum(); // ok: mpnanny-risky-op // expect: mpnanny-naive-softmax, mpnanny-unscaled-sum
  return p;
}
