// returnn#1590: a hand-rolled scaler whose unscale comes after the clip.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct LossScaler {
  double scale = 32768.0;
  void unscale_grads(const std::vector<torch::Tensor> &params) {
    for (const auto &p : params)
      p.grad().mul_(1.0 / scale);
  }
};

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{64, 64};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void step_late(Net net, LossScaler &scaler, torch::optim::Optimizer &opt, torch::Tensor x,
               torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  (loss * scaler.scale).backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0); // expect: mpnanny-clip-before-unscale
  scaler.unscale_grads(net->parameters());
  opt.step();
}

void step_right(Net net, LossScaler &scaler, torch::optim::Optimizer &opt, torch::Tensor x,
                torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  (loss * scaler.scale).backward();
  scaler.unscale_grads(net->parameters());
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0); // ok: mpnanny-clip-before-unscale
  opt.step();
}
