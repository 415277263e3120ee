// A training loop that unscales after clipping: too late.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{128, 10};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

torch::Tensor forward_loss(Net net, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  return loss;
}

void train(Net net, torch::optim::Optimizer &opt, std::vector<torch::Tensor> xs, torch::Tensor y) {
  mpnanny::GradScaler scaler;
  for (auto &x : xs) {
    opt.zero_grad();
    scaler.scale(forward_loss(net, x, y)).backward();
    torch::nn::utils::clip_grad_norm_(net->parameters(), 0.5); // expect: mpnanny-clip-before-unscale
    scaler.unscale_(opt);
    scaler.step(opt);
    scaler.update();
  }
}

void train_fixed(Net net, torch::optim::Optimizer &opt, std::vector<torch::Tensor> xs,
                 torch::Tensor y) {
  mpnanny::GradScaler scaler;
  for (auto &x : xs) {
    opt.zero_grad();
    scaler.scale(forward_loss(net, x, y)).backward();
    scaler.unscale_(opt);
    torch::nn::utils::clip_grad_norm_(net->parameters(), 0.5); // ok: mpnanny-clip-before-unscale
    scaler.step(opt);
    scaler.update();
  }
}
