// A hand-written SGD update under NoGradGuard changes the weights in place, like step().
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

void sgd(torch::nn::Linear net, torch::Tensor x, torch::Tensor y, double lr, double scale) {
  for (int step = 0; step < 100; ++step) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    (loss * scale).backward();
    torch::NoGradGuard no_grad;
    for (auto &p : net->parameters())
      p.sub_(p.grad() * (lr / scale)); // expect: mpnanny-autocast-cache
  }
}

void sgd_cleared(torch::nn::Linear net, torch::Tensor x, torch::Tensor y, double lr, double scale) {
  for (int step = 0; step < 100; ++step) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    (loss * scale).backward();
    torch::NoGradGuard no_grad;
    for (auto &p : net->parameters())
      p.sub_(p.grad() * (lr / scale)); // ok: mpnanny-autocast-cache
  }
}

void sgd_fp32(torch::nn::Linear net, torch::Tensor x, torch::Tensor y, double lr) {
  for (int step = 0; step < 100; ++step) {
    torch::mse_loss(net(x), y).backward();
    torch::NoGradGuard no_grad;
    for (auto &p : net->parameters())
      p.sub_(p.grad() * lr); // ok: mpnanny-autocast-cache
  }
}
