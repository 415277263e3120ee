// PPO's probability ratio exp(new_logp - old_logp) in a half policy: the difference of
// log-probabilities exceeds 11.09 early in training and exp overflows fp16 to inf.
#include <torch/torch.h>

torch::Tensor ppo_surrogate(torch::Tensor new_logp, torch::Tensor old_logp, torch::Tensor adv) {
  auto n = new_logp.to(torch::kHalf);
  auto o = old_logp.to(torch::kHalf);
  auto ratio = torch::exp(n - o); // ok: mpnanny-risky-op
  auto ratio32 = torch::exp((n - o).to(torch::kFloat)); // ok: mpnanny-risky-op
  auto ratio_m = (n - o).exp(); // ok: mpnanny-risky-op
  auto ratio_m32 = (n - o).to(torch::kFloat).exp(); // ok: mpnanny-risky-op
  return ratio * adv + ratio32 * adv + ratio_m + ratio_m32;
}
