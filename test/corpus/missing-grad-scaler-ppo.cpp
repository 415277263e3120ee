// PPO update of a half policy: the clipped surrogate and value losses, backward unscaled.
#include <torch/torch.h>
#include <mpnanny/grad_scaler.h>

struct PolicyImpl : torch::nn::Module {
  torch::nn::Linear body{64, 64}, value{64, 1};
  torch::Tensor forward(torch::Tensor obs) { return value(torch::tanh(body(obs))); }
};
TORCH_MODULE(Policy);

void ppo_update(Policy policy, torch::Tensor obs, torch::Tensor returns, torch::Tensor advantages,
                torch::Tensor ratio) {
  policy->to(torch::kHalf);
  auto v = policy(obs.to(torch::kHalf)).to(torch::kFloat);
  auto surrogate = ratio.to(torch::kFloat).clamp(0.8, 1.2) * advantages.to(torch::kFloat);
  auto total = -surrogate.mean() + 0.5 * torch::mse_loss(v, returns);
  torch::autograd::backward({total}); // expect: mpnanny-missing-grad-scaler
}

void ppo_update_scaled(Policy policy, mpnanny::GradScaler &scaler, torch::Tensor obs,
                       torch::Tensor returns) {
  policy->to(torch::kHalf);
  auto v = policy(obs.to(torch::kHalf)).to(torch::kFloat);
  auto total = 0.5 * torch::mse_loss(v, returns);
  torch::autograd::backward({scaler.scale(total)}); // ok: mpnanny-missing-grad-scaler
}

void ppo_update_bf16(Policy policy, torch::Tensor obs, torch::Tensor returns) {
  policy->to(torch::kBFloat16);
  auto v = policy(obs.to(torch::kBFloat16)).to(torch::kFloat);
  auto total = 0.5 * torch::mse_loss(v, returns);
  torch::autograd::backward({total}); // ok: mpnanny-missing-grad-scaler
}
