// PPO losses in a policy converted to fp16: the value loss squares its errors in fp16 (inf
// above 255.9); the surrogate is a mean of products, which adds in float and is not reported.
// The same code in fp32 or bf16 is fine.
#include <torch/torch.h>

torch::Tensor ppo_losses_half(torch::Tensor ratio, torch::Tensor adv, torch::Tensor values,
                              torch::Tensor returns) {
  auto r = ratio.to(torch::kHalf);
  auto policy_loss = -(r * adv).mean(); // ok: mpnanny-loss-in-half
  auto value_loss = (values - returns).pow(2).mean(); // expect: mpnanny-loss-in-half
  auto rf = r.to(torch::kFloat);
  auto policy_loss32 = -(rf * adv).mean(); // ok: mpnanny-loss-in-half
  return policy_loss + value_loss + policy_loss32;
}

torch::Tensor ppo_losses_bf16(torch::Tensor ratio, torch::Tensor adv) {
  auto r = ratio.to(torch::kBFloat16);
  auto policy_loss = -(r * adv).mean(); // ok: mpnanny-loss-in-half
  return policy_loss;
}

torch::Tensor ppo_losses_fp32(torch::Tensor ratio, torch::Tensor adv) {
  auto policy_loss = -(ratio * adv).mean(); // ok: mpnanny-loss-in-half
  return policy_loss;
}
