// With the autocast cache switched off there is nothing stale to reuse.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

void train(torch::nn::Linear net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
           torch::Tensor x, torch::Tensor y) {
  at::autocast::set_autocast_cache_enabled(false);
  for (int step = 0; step < 1000; ++step) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    scaler.step(opt); // ok: mpnanny-autocast-cache
    scaler.update();
  }
}

void train_manual(torch::nn::Linear net, torch::Tensor x, torch::Tensor y, double lr, double scale) {
  for (int step = 0; step < 1000; ++step) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    (loss * scale).backward();
    for (auto &p : net->parameters())
      p.data().add_(p.grad(), -lr / scale); // ok: mpnanny-autocast-cache
  }
}
