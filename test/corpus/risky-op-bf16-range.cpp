// bf16 has fp32's exponent range: exp overflows only above 88.72 and x*x above 1.84e19,
// like fp32, so bf16 code calling exp and pow is not flagged; the same code in fp16 is.
#include <torch/torch.h>

torch::Tensor bf16_energy(torch::Tensor x) {
  auto h = x.to(torch::kBFloat16);
  auto e = torch::exp(h); // ok: mpnanny-risky-op
  auto s = h.pow(2); // ok: mpnanny-risky-op
  auto t = h.exp(); // ok: mpnanny-risky-op
  return e + s + t;
}

torch::Tensor fp16_energy(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto e = torch::exp(h); // ok: mpnanny-risky-op
  auto t = h.exp(); // ok: mpnanny-risky-op
  return e + t;
}
