// Normalizing by a magnitude that may be 0 (sign, unit vectors, ratios) in half.
#include <torch/torch.h>

torch::Tensor half_ratios(torch::Tensor x, torch::Tensor y) {
  auto h = x.to(torch::kHalf);
  auto g = y.to(torch::kHalf);
  auto sign = h / h.abs(); // expect: mpnanny-unsafe-math
  auto safe_sign = h / (h.abs() + 1e-3); // ok: mpnanny-unsafe-math
  auto gate = g / torch::relu(h); // expect: mpnanny-unsafe-math
  auto gate_eps = g / (torch::relu(h) + 1e-2); // ok: mpnanny-unsafe-math
  auto by_prob = g.div(torch::sigmoid(h) + 1e-3); // ok: mpnanny-unsafe-math
  auto plain = g / h; // ok: mpnanny-unsafe-math
  auto inv = h.abs().reciprocal(); // expect: mpnanny-unsafe-math
  return sign + safe_sign + gate + gate_eps + by_prob + plain + inv;
}
