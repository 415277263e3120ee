// Entropy of independent sigmoid gates: p * log(p) at p = 0 is 0 * -inf = NaN.
#include <torch/torch.h>

torch::Tensor half_gate_entropy(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kHalf));
  auto plogp = p * torch::log(p); // expect: mpnanny-unsafe-math
  auto guarded = p * torch::log(p.clamp_min(1e-3)); // ok: mpnanny-unsafe-math
  auto q = 1 - p;
  auto qlogq = q * q.log(); // expect: mpnanny-unsafe-math
  auto q_guarded = q * (q + 1e-3).log(); // ok: mpnanny-unsafe-math
  return -(plogp + qlogq) + guarded + q_guarded;
}

// bf16 keeps a sigmoid probability above 0 down to 9.2e-41: not a bf16 finding.
torch::Tensor bf16_gate_entropy(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kBFloat16));
  auto plogp = p * torch::log(p); // ok: mpnanny-unsafe-math
  auto relu_log = torch::log(torch::relu(logits.to(torch::kBFloat16))); // expect: mpnanny-unsafe-math
  return plogp + relu_log;
}
