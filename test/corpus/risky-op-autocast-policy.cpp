// Under autocast, exp, pow and logsumexp run in fp32 (aten/src/ATen/autocast_mode.cpp):
// the same calls that are risky in a half model are safe here.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor autocast_forward(torch::Tensor q, torch::Tensor k) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto e = torch::exp(scores); // ok: mpnanny-risky-op
  auto p = scores.pow(2); // ok: mpnanny-risky-op
  auto lse = torch::logsumexp(scores, {-1}); // ok: mpnanny-risky-op
  at::autocast::set_enabled(false);
  return e + p + lse;
}

torch::Tensor half_forward(torch::Tensor q, torch::Tensor k) {
  auto scores = torch::matmul(q.to(torch::kHalf), k.to(torch::kHalf));
  auto e = torch::exp(scores); // ok: mpnanny-risky-op
  auto m = scores.exp(); // ok: mpnanny-risky-op
  auto e32 = torch::exp(scores.to(torch::kFloat)); // ok: mpnanny-risky-op
  return e + m + e32;
}
