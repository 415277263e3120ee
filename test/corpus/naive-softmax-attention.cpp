// Hand-written attention weights in a half model: exp(s) / sum(exp(s)) without the max.
#include <torch/torch.h>

torch::Tensor half_attention(torch::Tensor q, torch::Tensor k) {
  auto s = torch::matmul(q, k).to(torch::kHalf);
  auto w = torch::exp(s) / torch::exp(s).sum(-1, true); // ok: mpnanny-risky-op // expect: mpnanny-naive-softmax
  auto w2 = s.exp().div(s.exp().sum({-1}, true)); // ok: mpnanny-risky-op // expect: mpnanny-naive-softmax
  auto w_stable = torch::softmax(s, -1, torch::kFloat); // ok: mpnanny-naive-softmax
  auto w_up = torch::exp(s.to(torch::kFloat)) / torch::exp(s.to(torch::kFloat)).sum(-1, true); // ok: mpnanny-naive-softmax
  auto ratio = s / s.abs().sum(-1, true); // ok: mpnanny-naive-softmax
  return w + w2 + w_stable + w_up + ratio;
}
