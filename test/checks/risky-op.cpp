// RUN: %mpnanny_check --checks='-*,mpnanny-risky-op' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-risky-op' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// A model converted to half: every op runs in fp16.
struct HalfNetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto p = torch::softmax(x, -1);
// CHECK: :[[@LINE-1]]:14: warning: torch::softmax in fp16 {{.*}} [mpnanny-risky-op]
    auto m = x.softmax(1);
// CHECK: :[[@LINE-1]]:16: warning: Tensor::softmax in fp16 {{.*}} [mpnanny-risky-op]
    auto f = torch::nn::functional::softmax(x, torch::nn::functional::SoftmaxFuncOptions(1));
// CHECK: :[[@LINE-1]]:14: warning: torch::nn::functional::softmax in fp16 {{.*}} [mpnanny-risky-op]
    // Safe: the accumulation dtype is fp32, or the input is upcast first.
    auto a = torch::softmax(x, -1, torch::kFloat);
    auto b = torch::softmax(x.to(torch::kFloat), -1);
    auto up = x.to(torch::kFloat32);
    auto c = up.softmax(-1);
    auto d = torch::nn::functional::softmax(
        x, torch::nn::functional::SoftmaxFuncOptions(1).dtype(torch::kFloat));
    return p + m + f + a + b + c + d;
  }
};
TORCH_MODULE(HalfNet);

struct SoftmaxModuleImpl : torch::nn::Module {
  torch::nn::Softmax softmax{torch::nn::SoftmaxOptions(1)};
  torch::Tensor forward(torch::Tensor x) {
    return softmax(x);
// CHECK: :[[@LINE-1]]:12: warning: torch::nn::Softmax in fp16 {{.*}} [mpnanny-risky-op]
  }
};
TORCH_MODULE(SoftmaxModule);

void train_half() {
  HalfNet net;
  net->to(torch::kHalf);
  SoftmaxModule sm;
  sm->to(torch::kCUDA, torch::kHalf);
}

// Under autocast softmax runs in fp32: nothing to report; binary_cross_entropy raises.
torch::Tensor autocast_step(torch::Tensor logits, torch::Tensor target) {
  at::autocast::set_enabled(true);
  auto p = torch::softmax(logits, -1);
  auto loss = torch::binary_cross_entropy(torch::sigmoid(logits), target);
// CHECK: :[[@LINE-1]]:15: warning: torch::binary_cross_entropy {{.*}} [mpnanny-risky-op]
  auto safe = torch::binary_cross_entropy_with_logits(logits, target);
  at::autocast::set_enabled(false);
  auto after = torch::binary_cross_entropy(torch::sigmoid(logits), target);
  return loss + safe + after + p;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_only(torch::Tensor x) {
  return torch::softmax(x, -1) + torch::log(x);
}
