// The apex O2 recipe by hand: fp16 model, fp32 master weights, gradients copied across.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{32, 32};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void o2_step(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto params = net->parameters();
  std::vector<torch::Tensor> master;
  for (auto &p : params)
    master.push_back(p.detach().to(torch::kFloat).requires_grad_());
  torch::optim::Adam opt(master, torch::optim::AdamOptions(1e-4)); // ok: mpnanny-master-weights
  (torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y) * 1024.0).backward();
  for (size_t i = 0; i < params.size(); ++i)
    master[i].mutable_grad() = params[i].grad().to(torch::kFloat) / 1024.0;
  opt.step();
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i)
    params[i].copy_(master[i]);
}

void o2_forgot_master(Net net) {
  net->to(torch::kHalf);
  std::vector<torch::Tensor> half_params;
  for (auto &p : net->parameters())
    half_params.push_back(p);
  torch::optim::Adam opt(half_params, torch::optim::AdamOptions(1e-4)); // expect: mpnanny-master-weights
}
