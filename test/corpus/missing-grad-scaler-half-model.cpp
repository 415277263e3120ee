// A model converted to fp16 trained with no loss scaling: small gradients flush to 0.
#include <torch/torch.h>
#include <mpnanny/grad_scaler.h>

struct MlpImpl : torch::nn::Module {
  torch::nn::Linear fc1{784, 256}, fc2{256, 10};
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
};
TORCH_MODULE(Mlp);

void train_half(Mlp net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto out = net(x.to(torch::kHalf)).to(torch::kFloat);
  auto loss = torch::mse_loss(out, y);
  opt.zero_grad();
  loss.backward(); // expect: mpnanny-missing-grad-scaler
  opt.step();
}

void train_half_scaled(Mlp net, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt,
                       torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y);
  scaler.scale(loss).backward(); // ok: mpnanny-missing-grad-scaler
}

void train_bf16(Mlp net, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kBFloat16);
  auto loss = torch::mse_loss(net(x.to(torch::kBFloat16)).to(torch::kFloat), y);
  loss.backward(); // ok: mpnanny-missing-grad-scaler
  opt.step();
}
