// clip_grad_value_ on gradients still multiplied by a static loss scale.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{32, 32};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void static_scale_clip(Net net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  const float loss_scale = 1024.0f;
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y);
  (loss * loss_scale).backward();
  torch::nn::utils::clip_grad_value_(net->parameters(), 5.0); // expect: mpnanny-clip-before-unscale
  for (auto &p : net->parameters())
    p.grad().div_(loss_scale);
  opt.step();
}

void static_scale_divided(Net net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  const float loss_scale = 1024.0f;
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y);
  (loss * loss_scale).backward();
  for (auto &p : net->parameters())
    p.grad().div_(loss_scale);
  torch::nn::utils::clip_grad_value_(net->parameters(), 5.0); // ok: mpnanny-clip-before-unscale
  opt.step();
}
