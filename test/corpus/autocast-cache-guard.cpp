// An RAII autocast guard (LibTorch has none) that forgets to clear the cache on exit.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct AutocastGuard {
  AutocastGuard() { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::set_enabled(false); }
};

struct ClearingGuard {
  ClearingGuard() {
    at::autocast::increment_nesting();
    at::autocast::set_enabled(true);
  }
  ~ClearingGuard() {
    at::autocast::set_enabled(false);
    if (at::autocast::decrement_nesting() == 0)
      at::autocast::clear_cache();
  }
};

void train(torch::nn::Linear net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
           torch::Tensor x, torch::Tensor y) {
  for (int step = 0; step < 1000; ++step) {
    torch::Tensor loss;
    {
      AutocastGuard autocast;
      loss = torch::mse_loss(net(x), y);
    }
    scaler.scale(loss).backward();
    scaler.step(opt); // expect: mpnanny-autocast-cache
    scaler.update();
  }
}

void train_fixed(torch::nn::Linear net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                 torch::Tensor x, torch::Tensor y) {
  for (int step = 0; step < 1000; ++step) {
    torch::Tensor loss;
    {
      ClearingGuard autocast;
      loss = torch::mse_loss(net(x), y);
    }
    scaler.scale(loss).backward();
    scaler.step(opt); // ok: mpnanny-autocast-cache
    scaler.update();
  }
}
