// Cross-entropy in a classifier converted to fp16: log-probabilities and the loss in fp16.
// Under autocast it becomes fp32 through log_softmax + nll_loss; in bf16 the range holds.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{128, 10};
  torch::nn::CrossEntropyLoss criterion;
  torch::Tensor loss_of(torch::Tensor x, torch::Tensor target) {
    auto logits = fc(x);
    auto a = F::cross_entropy(logits, target); // expect: mpnanny-loss-in-half
    auto b = criterion(logits, target); // expect: mpnanny-loss-in-half
    auto c = F::cross_entropy(logits.to(torch::kFloat), target); // ok: mpnanny-loss-in-half
    auto d = F::nll_loss(torch::log_softmax(logits, 1, torch::kFloat), target); // ok: mpnanny-loss-in-half
    return a + b + c + d;
  }
};
TORCH_MODULE(Net);

void build() {
  Net net;
  net->to(torch::kHalf);
}

torch::Tensor autocast_ce(torch::Tensor x, torch::Tensor w, torch::Tensor target) {
  at::autocast::set_enabled(true);
  auto logits = torch::matmul(x, w);
  auto loss = F::cross_entropy(logits, target); // ok: mpnanny-loss-in-half
  at::autocast::set_enabled(false);
  return loss;
}

torch::Tensor bf16_ce(torch::Tensor logits, torch::Tensor target) {
  return F::cross_entropy(logits.to(torch::kBFloat16), target); // ok: mpnanny-loss-in-half
}
