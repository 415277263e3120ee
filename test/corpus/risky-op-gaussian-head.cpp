// A Gaussian policy head (PPO/SAC idiom): std = exp(log_std), variance = std.pow(2).
// In a half model exp overflows for log_std > 11.09 and pow(2) for std > 255.9; the
// usual fixes (compute in fp32, or run under autocast where both run in fp32) are safe.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct GaussianHeadImpl : torch::nn::Module {
  torch::Tensor log_std = register_parameter("log_std", torch::zeros({8}));
  torch::Tensor forward(torch::Tensor mu) {
    auto std = torch::exp(log_std); // ok: mpnanny-risky-op
    auto std32 = torch::exp(log_std.to(torch::kFloat)); // ok: mpnanny-risky-op
    auto var32 = std32.pow(2); // ok: mpnanny-risky-op
    return mu + std + var32;
  }
};
TORCH_MODULE(GaussianHead);

void to_half() {
  GaussianHead head;
  head->to(torch::kHalf);
}

torch::Tensor autocast_log_prob(torch::Tensor x, torch::Tensor mu, torch::Tensor log_std) {
  at::autocast::set_enabled(true);
  auto std = torch::exp(log_std); // ok: mpnanny-risky-op
  auto var = std.pow(2); // ok: mpnanny-risky-op
  at::autocast::set_enabled(false);
  return (x - mu) * var;
}

torch::Tensor fp32_log_prob(torch::Tensor x, torch::Tensor mu, torch::Tensor log_std) {
  auto std = log_std.exp(); // ok: mpnanny-risky-op
  auto var = std.pow(2); // ok: mpnanny-risky-op
  return (x - mu) * var;
}

torch::Tensor bf16_log_prob(torch::Tensor x, torch::Tensor log_std) {
  auto std = torch::exp(log_std.to(torch::kBFloat16)); // ok: mpnanny-risky-op
  return x * std;
}
