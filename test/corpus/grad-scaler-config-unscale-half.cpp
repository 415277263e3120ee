// pytorch#74739: a model converted with .half() trained with a GradScaler.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{64, 64};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void half_with_scaler(Net net, std::vector<torch::Tensor> master, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1)); // expect: mpnanny-master-weights
  torch::optim::SGD master_opt(master, torch::optim::SGDOptions(0.1));
  mpnanny::GradScaler scaler;
  auto loss = torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y);
  scaler.scale(loss).backward();
  scaler.unscale_(opt); // expect: mpnanny-grad-scaler-config
  scaler.unscale_(master_opt); // ok: mpnanny-grad-scaler-config
  scaler.step(opt);
  scaler.update();
}

void fp32_params_autocast(Net net, torch::Tensor x, torch::Tensor y) {
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
  mpnanny::GradScaler scaler;
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.unscale_(opt); // ok: mpnanny-grad-scaler-config
  scaler.step(opt); // ok: mpnanny-grad-scaler-config
  scaler.update();
}
