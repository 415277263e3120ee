// Lightning#9330: gradient clipping applied to the scaled gradients of native AMP.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{256, 256};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void clip_scaled(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                 torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0); // expect: mpnanny-clip-before-unscale
  scaler.step(opt);
  scaler.update();
}

void clip_unscaled(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                   torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  scaler.unscale_(opt);
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0); // ok: mpnanny-clip-before-unscale
  scaler.step(opt);
  scaler.update();
}
