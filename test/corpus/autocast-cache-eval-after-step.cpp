// Straight-line code: train step, then an evaluation forward that reuses the old half weights.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{16, 16};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

torch::Tensor step_then_eval(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                             torch::Tensor x, torch::Tensor y, torch::Tensor val) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt); // expect: mpnanny-autocast-cache
  scaler.update();
  at::autocast::set_enabled(true);
  auto prediction = net(val);
  at::autocast::set_enabled(false);
  return prediction;
}

torch::Tensor step_clear_eval(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                              torch::Tensor x, torch::Tensor y, torch::Tensor val) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  scaler.scale(loss).backward();
  scaler.step(opt); // ok: mpnanny-autocast-cache
  scaler.update();
  at::autocast::clear_cache();
  at::autocast::set_enabled(true);
  auto prediction = net(val);
  at::autocast::set_enabled(false);
  return prediction;
}
