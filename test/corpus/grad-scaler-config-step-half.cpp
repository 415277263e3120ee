// step() unscales too when unscale_() was not called: the same error on fp16 parameters.
#include <torch/torch.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{8, 8};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void step_half(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto opt = std::make_shared<torch::optim::Adam>(net->parameters()); // expect: mpnanny-master-weights
  mpnanny::GradScaler scaler;
  scaler.scale(torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y)).backward();
  scaler.step(*opt); // expect: mpnanny-grad-scaler-config
  scaler.update();
}

void step_master(Net net, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  std::vector<torch::Tensor> master;
  for (auto &p : net->parameters())
    master.push_back(p.detach().clone().to(torch::kFloat).requires_grad_());
  auto opt = std::make_shared<torch::optim::Adam>(master); // ok: mpnanny-master-weights
  mpnanny::GradScaler scaler;
  scaler.scale(torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y)).backward();
  scaler.step(*opt); // ok: mpnanny-grad-scaler-config
  scaler.update();
}
