// Clamp bounds in fp16: 1e-9 rounds to 0 (below 2.98e-8), so clamp(p, 1e-9, 1) no longer
// keeps p away from 0 before a log; 1e5 is beyond 65504.
#include <torch/torch.h>

torch::Tensor half_probs(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kHalf));
  auto a = p.clamp(1e-9, 1); // expect: mpnanny-fp16-constant-range
  auto b = p.clamp(1e-4, 1); // ok: mpnanny-fp16-constant-range
  auto c = logits.to(torch::kHalf).clamp(-1e5, 1e5); // expect: mpnanny-fp16-constant-range
  auto d = logits.to(torch::kHalf).clamp(-6e4, 6e4); // ok: mpnanny-fp16-constant-range
  auto e = p.clamp_min(1e-12); // expect: mpnanny-fp16-constant-range
  auto f = p.to(torch::kFloat).clamp_min(1e-12); // ok: mpnanny-fp16-constant-range
  return a + b + c + d + e + f;
}

torch::Tensor bf16_probs(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kBFloat16));
  return p.clamp(1e-9, 1); // ok: mpnanny-fp16-constant-range
}
