// Cross-entropy in a classifier converted to fp16. The default mean is not a hazard: log_softmax
// and nll_loss add in float and divide before rounding (SoftMax.cu, Loss.cu), and
// log-probabilities do not flush. A sum stored in fp16 is: a sum reduction, or label smoothing,
// which sums each row's log-probabilities over the classes (LossNLL.cpp, -input.sum(class_dim)).
// Under autocast nll_loss runs in fp32; in bf16 the range holds.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{128, 10};
  torch::nn::CrossEntropyLoss criterion;
  torch::nn::Linear lm_head{128, 32000};
  torch::Tensor loss_of(torch::Tensor x, torch::Tensor target) {
    auto logits = fc(x);
    auto a = F::cross_entropy(logits, target); // ok: mpnanny-loss-in-half
    auto b = criterion(logits, target); // ok: mpnanny-loss-in-half
    auto tokens = lm_head(x);
    auto smoothed = F::cross_entropy(tokens, target, F::CrossEntropyFuncOptions().label_smoothing(0.1)); // expect: mpnanny-loss-in-half
    auto summed = F::nll_loss(torch::log_softmax(tokens, 1), target, F::NLLLossFuncOptions().reduction(torch::kSum)); // expect: mpnanny-loss-in-half
    auto token_mean = F::nll_loss(torch::log_softmax(tokens, 1), target); // ok: mpnanny-loss-in-half
    auto c = F::cross_entropy(logits.to(torch::kFloat), target); // ok: mpnanny-loss-in-half
    auto d = F::nll_loss(torch::log_softmax(logits, 1, torch::kFloat), target); // ok: mpnanny-loss-in-half
    return a + b + c + d + smoothed + summed + token_mean;
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
