// Under autocast pow and square run in fp32, but x * x is not covered by autocast: it stays
// in x's type, fp16 when the code shows it.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor autocast_rms(torch::Tensor x, torch::Tensor w) {
  at::autocast::set_enabled(true);
  auto a = x.pow(2).mean(-1, true); // ok: mpnanny-norm-in-half
  auto b = x.square().mean(-1, true); // ok: mpnanny-norm-in-half
  auto c = (x * x).mean(-1, true); // ok: mpnanny-norm-in-half
  auto h = x.to(torch::kHalf);
  auto d = (h * h).mean(-1, true); // expect: mpnanny-norm-in-half
  auto e = h.mul(h).mean(-1, true); // expect: mpnanny-norm-in-half
  at::autocast::set_enabled(false);
  return a + b + c + d + e;
}
