// An optimizer created with new over a bf16 policy network (reinforcement learning).
#include <torch/torch.h>

struct PolicyImpl : torch::nn::Module {
  torch::nn::Linear body{64, 64}, head{64, 4};
  torch::Tensor forward(torch::Tensor obs) { return head(torch::tanh(body(obs))); }
};
TORCH_MODULE(Policy);

torch::optim::Optimizer *make_bf16(Policy policy) {
  policy->to(torch::kBFloat16);
  return new torch::optim::RMSprop(policy->parameters(), torch::optim::RMSpropOptions(7e-4)); // expect: mpnanny-master-weights
}

torch::optim::Optimizer *make_fp32(Policy policy) {
  return new torch::optim::RMSprop(policy->parameters(), torch::optim::RMSpropOptions(7e-4)); // ok: mpnanny-master-weights
}
