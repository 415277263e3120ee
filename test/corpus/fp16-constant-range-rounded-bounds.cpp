// Bounds written to keep a probability off 1: in fp16 and bf16 the bound itself rounds to 1
// (the largest fp16 value below 1 is 0.99951172, bf16's 0.99609375), so log1p(-p) is -inf.
#include <torch/torch.h>
#include <limits>

torch::Tensor half_bernoulli_nll(torch::Tensor logits, torch::Tensor y) {
  auto p = torch::sigmoid(logits.to(torch::kHalf));
  auto a = p.clamp(1e-7, 1 - 1e-7); // expect: mpnanny-fp16-constant-range
  auto b = torch::clamp(p, 1.21e-7, 1. - 1.21e-7); // expect: mpnanny-fp16-constant-range
  const float eps = std::numeric_limits<float>::epsilon();
  auto c = p.clamp(eps, 1 - eps); // expect: mpnanny-fp16-constant-range
  auto d = p.clamp_max(0.9999); // expect: mpnanny-fp16-constant-range
  auto e = p.clamp(1e-4, 1 - 1e-3); // ok: mpnanny-fp16-constant-range
  auto f = p.to(torch::kFloat).clamp(1e-7, 1 - 1e-7); // ok: mpnanny-fp16-constant-range
  return y * torch::log(a) + (1 - y) * torch::log1p(-b) + c + d + e + f;
}

torch::Tensor bf16_bounds(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kBFloat16));
  auto a = p.clamp(1e-4, 1 - 1e-3); // expect: mpnanny-fp16-constant-range
  auto b = p.clamp(1e-4, 1 - 1e-2); // ok: mpnanny-fp16-constant-range
  auto margin = (1 + 1e-3) - p; // expect: mpnanny-fp16-constant-range
  auto kept = (1 - p) + 1e-3; // ok: mpnanny-fp16-constant-range
  return a + b + margin + kept;
}

// fp32 code keeps 1 - 1e-7 below 1 (0.99999988).
torch::Tensor fp32_bounds(torch::Tensor logits) {
  auto p = torch::sigmoid(logits);
  return torch::log1p(-p.clamp(1e-7, 1 - 1e-7)); // ok: mpnanny-fp16-constant-range
}
