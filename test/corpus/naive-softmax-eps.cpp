// A softmax written by hand with an eps against an all-zero row (the masked-softmax idiom):
// the eps keeps the sum from being 0, not from being inf, so an exp that overflows in fp16
// still gives inf / inf = NaN.
#include <torch/torch.h>

torch::Tensor half_guarded_softmax(torch::Tensor scores) {
  auto s = scores.to(torch::kHalf);
  auto m = s.exp();
  auto p = m / (m.sum(-1, true) + 1e-6); // expect: mpnanny-naive-softmax
  auto q = m / m.sum(-1, true).clamp_min(1e-6); // expect: mpnanny-naive-softmax
  auto shifted = (s - s.amax(-1, true)).exp();
  auto r = shifted / (shifted.sum(-1, true) + 1e-6); // ok: mpnanny-naive-softmax
  return p + q + r;
}
