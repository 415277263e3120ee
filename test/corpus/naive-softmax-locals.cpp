// The same softmax spelled through local variables, with and without the max shift.
#include <torch/torch.h>

torch::Tensor half_weights(torch::Tensor scores) {
  auto s = scores.to(torch::kHalf);
  auto e = s.exp(); // ok: mpnanny-risky-op
  auto p = e / e.sum(-1, true); // expect: mpnanny-naive-softmax
  auto z = e.sum(-1, false).unsqueeze(-1);
  auto p2 = e / z; // expect: mpnanny-naive-softmax
  auto shifted = s - s.amax(-1, true);
  auto es = shifted.exp(); // ok: mpnanny-risky-op
  auto p3 = es / es.sum(-1, true); // ok: mpnanny-naive-softmax
  auto m = std::get<0>(s.max(-1, true));
  auto em = (s - m).exp(); // ok: mpnanny-risky-op
  auto p4 = em / em.sum(-1, true); // ok: mpnanny-naive-softmax
  auto other = e / s.sum(-1, true); // ok: mpnanny-naive-softmax
  return p + p2 + p3 + p4 + other;
}
