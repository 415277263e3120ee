// A regression model converted to fp16 computing its loss in fp16 (transformers#25938,
// pytext PR #581): errors above 255.9 square to inf. Upcast before the loss.
#include <torch/torch.h>

namespace F = torch::nn::functional;

struct RegressorImpl : torch::nn::Module {
  torch::nn::Linear fc{32, 1};
  torch::nn::MSELoss criterion;
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::Tensor step(torch::Tensor x, torch::Tensor y) {
    auto pred = forward(x);
    auto a = F::mse_loss(pred, y); // expect: mpnanny-loss-in-half
    auto b = criterion(pred, y); // expect: mpnanny-loss-in-half
    auto c = torch::mse_loss(pred, y); // expect: mpnanny-loss-in-half
    auto d = F::mse_loss(pred.to(torch::kFloat), y.to(torch::kFloat)); // ok: mpnanny-loss-in-half
    auto e = criterion(pred.to(torch::kFloat), y.to(torch::kFloat)); // ok: mpnanny-loss-in-half
    return a + b + c + d + e;
  }
};
TORCH_MODULE(Regressor);

void build() {
  Regressor model;
  model->to(torch::kHalf);
}
