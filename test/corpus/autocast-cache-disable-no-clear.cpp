// set_enabled(false) each iteration is not enough in C++: only clear_cache() drops the casts.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{128, 128};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void train(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
           std::vector<torch::Tensor> batches, torch::Tensor y) {
  for (auto &x : batches) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    scaler.step(opt); // expect: mpnanny-autocast-cache
    scaler.update();
  }
}

void train_cleared_after_step(Net net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                              std::vector<torch::Tensor> batches, torch::Tensor y) {
  for (auto &x : batches) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    scaler.scale(loss).backward();
    scaler.step(opt); // ok: mpnanny-autocast-cache
    scaler.update();
    at::autocast::clear_cache();
  }
}
