// Under CUDA autocast sum and cumsum run in fp32 unless the call passes a dtype: a half
// dtype brings the hazard back.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor autocast_stats(torch::Tensor a, torch::Tensor b) {
  at::autocast::set_enabled(true);
  auto h = torch::matmul(a, b);
  auto total = h.sum(); // ok: mpnanny-unscaled-sum
  auto running = h.cumsum(0); // ok: mpnanny-unscaled-sum
  auto forced = h.sum(torch::kHalf); // expect: mpnanny-unscaled-sum
  auto forced_running = h.cumsum(0, torch::kHalf); // expect: mpnanny-unscaled-sum
  at::autocast::set_enabled(false);
  return total + running + forced + forced_running;
}

torch::Tensor fp32_stats(torch::Tensor x) {
  return x.sum() + x.cumsum(0); // ok: mpnanny-unscaled-sum
}
