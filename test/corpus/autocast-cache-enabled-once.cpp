// Flow-Factory PR #186: autocast switched on once before the loop; the loss stays flat.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc1{32, 32}, fc2{32, 1};
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
};
TORCH_MODULE(Net);

void train(Net net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_cpu_enabled(true);
  for (int epoch = 0; epoch < 100; ++epoch) {
    opt.zero_grad();
    auto loss = torch::mse_loss(net(x), y);
    loss.backward(); // expect: mpnanny-missing-grad-scaler
    opt.step(); // expect: mpnanny-autocast-cache
  }
  at::autocast::set_cpu_enabled(false);
}

void train_cleared(Net net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  for (int epoch = 0; epoch < 100; ++epoch) {
    opt.zero_grad();
    at::autocast::set_cpu_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
    loss.backward();
    opt.step(); // ok: mpnanny-autocast-cache
  }
}
