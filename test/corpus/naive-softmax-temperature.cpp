// Temperature-scaled sampling distributions written by hand.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor half_sample_probs(torch::Tensor logits, double temperature) {
  auto h = logits.to(torch::kHalf);
  auto t = h / temperature;
  auto p = torch::exp(t) / torch::exp(t).sum(-1, true); // ok: mpnanny-risky-op // expect: mpnanny-naive-softmax
  auto q = torch::softmax(h / temperature, -1, torch::kFloat); // ok: mpnanny-naive-softmax
  return p + q;
}

torch::Tensor autocast_sample_probs(torch::Tensor logits, double temperature) {
  at::autocast::set_enabled(true);
  auto t = logits / temperature;
  auto p = torch::exp(t) / torch::exp(t).sum(-1, true); // ok: mpnanny-naive-softmax
  at::autocast::set_enabled(false);
  return p;
}
