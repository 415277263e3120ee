// A hand-rolled dynamic loss scaler (LibTorch has no GradScaler, pytorch#44710).
#include <torch/torch.h>

struct DynamicLossScaler {
  float loss_scale = 65536.0f;
  int good_steps = 0;
  bool check_overflow(const std::vector<torch::Tensor> &params) {
    for (const auto &p : params)
      if (torch::isfinite(p.grad()).logical_not().max().template item<bool>())
        return true;
    return false;
  }
};

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{128, 1};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void scaled_step(Net net, DynamicLossScaler &scaler, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y);
  (loss * scaler.loss_scale).backward(); // ok: mpnanny-missing-grad-scaler
  auto scaled = loss * scaler.loss_scale;
  scaled.backward(); // ok: mpnanny-missing-grad-scaler
}

void forgot_scaling(Net net, DynamicLossScaler &scaler, torch::Tensor x, torch::Tensor y) {
  net->to(torch::kHalf);
  auto loss = torch::mse_loss(net(x.to(torch::kHalf)).to(torch::kFloat), y);
  loss.backward(); // expect: mpnanny-missing-grad-scaler
  if (scaler.check_overflow(net->parameters()))
    scaler.loss_scale /= 2;
}
