// bf16 holds every square fp32 holds: a hand-written RMSNorm in bf16 is fine; the same code
// in fp16 is not.
#include <torch/torch.h>

torch::Tensor bf16_rms(torch::Tensor x) {
  auto h = x.to(torch::kBFloat16);
  auto var = h.pow(2).mean(-1, true); // ok: mpnanny-norm-in-half
  auto var2 = (h * h).mean(-1, true); // ok: mpnanny-norm-in-half
  auto var3 = h.var(-1, false, true); // ok: mpnanny-norm-in-half
  return var + var2 + var3;
}

torch::Tensor fp16_rms(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto var = h.square().mean(-1, true); // expect: mpnanny-norm-in-half
  auto cube = h.pow(3).mean(-1, true); // ok: mpnanny-norm-in-half // expect: mpnanny-risky-op
  return var + cube;
}

torch::Tensor fp32_rms(torch::Tensor x) {
  return x.pow(2).mean(-1, true) + (x * x).mean(-1, true); // ok: mpnanny-norm-in-half
}
