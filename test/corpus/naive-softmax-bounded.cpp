// Bounded scores: a clamp or a tanh keeps exp below 65504 only if the bound is <= 11.09.
#include <torch/torch.h>

torch::Tensor half_bounded(torch::Tensor scores) {
  auto s = scores.to(torch::kHalf);
  auto wide = s.clamp(-30, 30).exp(); // ok: mpnanny-risky-op // expect: mpnanny-unsafe-math
  auto p = wide / wide.sum(-1, true); // expect: mpnanny-naive-softmax
  auto narrow = s.clamp(-10, 10).exp(); // ok: mpnanny-risky-op, mpnanny-unsafe-math
  auto q = narrow / narrow.sum(-1, true); // ok: mpnanny-naive-softmax
  auto soft = torch::exp(torch::tanh(s) * 8); // ok: mpnanny-risky-op, mpnanny-unsafe-math
  auto r = soft / soft.sum(-1, true); // ok: mpnanny-naive-softmax
  return p + q + r;
}
