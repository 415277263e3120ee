// Clamped log-variances and scaled scores fed to exp (VAE std, SAC log_std), in bf16:
// exp overflows bf16 above ln(3.39e38) = 88.72, like fp32.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor bf16_std(torch::Tensor log_var) {
  auto b = log_var.to(torch::kBFloat16);
  auto wide = b.clamp(-100, 100).exp(); // expect: mpnanny-unsafe-math
  auto narrow = b.clamp(-20, 20).exp(); // ok: mpnanny-unsafe-math
  auto scaled = torch::exp(torch::tanh(b) * 95); // expect: mpnanny-unsafe-math
  auto bounded = torch::exp(torch::tanh(b) * 50); // ok: mpnanny-unsafe-math
  auto halved = (0.5 * b.clamp(-100, 100)).exp(); // ok: mpnanny-unsafe-math
  auto unknown = b.exp(); // ok: mpnanny-unsafe-math
  return wide + narrow + scaled + bounded + halved + unknown;
}

// Under autocast exp runs in fp32: the limit is 88.72 as well.
torch::Tensor autocast_std(torch::Tensor log_var) {
  at::autocast::set_enabled(true);
  auto s = log_var.clamp(-20, 20).exp(); // ok: mpnanny-unsafe-math
  auto t = log_var.clamp(-200, 200).exp(); // expect: mpnanny-unsafe-math
  at::autocast::set_enabled(false);
  return s + t;
}
