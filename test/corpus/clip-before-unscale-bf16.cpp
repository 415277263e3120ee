// bf16 needs no scaler: clipping right after backward is correct there.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{64, 64};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void bf16_step(Net net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_cpu_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  loss.backward();
  torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0); // ok: mpnanny-clip-before-unscale
  torch::nn::utils::clip_grad_value_(net->parameters(), 1.0); // ok: mpnanny-clip-before-unscale
  opt.step();
}

void fp16_step(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt, torch::Tensor x,
               torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  torch::nn::utils::clip_grad_value_(net->parameters(), 1.0); // expect: mpnanny-clip-before-unscale
  scaler.step(opt);
  scaler.update();
}
