// backward() inside the autocast region: PyTorch recommends leaving autocast first.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{64, 64};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void inside(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt, torch::Tensor x,
            torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  scaler.scale(loss).backward(); // expect: mpnanny-missing-grad-scaler
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.step(opt);
  scaler.update();
}

void outside(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt, torch::Tensor x,
             torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward(); // ok: mpnanny-missing-grad-scaler
  scaler.step(opt);
  scaler.update();
}

void bf16_outside(Net net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_cpu_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_cpu_enabled(false);
  at::autocast::clear_cache();
  loss.backward(); // ok: mpnanny-missing-grad-scaler
  opt.step();
}
