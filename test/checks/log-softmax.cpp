// RUN: %mpnanny_check --checks='-*,mpnanny-log-softmax' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-log-softmax' %s -- %check_flags | %FileCheckAll %s
// With mpnanny-unsafe-math on as well, the log of a softmax is reported once, here.
// RUN: %mpnanny_check --checks='-*,mpnanny-log-softmax,mpnanny-unsafe-math' %s -- %check_flags | %FileCheckAll %s
// RUN: cp %s %t.cpp
// RUN: not %mpnanny_check --checks='-*,mpnanny-log-softmax' --fix %t.cpp -- %check_flags > /dev/null
// RUN: FileCheck -check-prefix=CHECK-FIXES -input-file=%t.cpp %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

torch::Tensor half_head(torch::Tensor x, torch::Tensor target) {
  auto h = x.to(torch::kHalf);
  auto a = torch::log(torch::softmax(h, -1));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of torch::softmax probabilities (computed in fp16): a probability below 2.98e-8 is exactly 0 in fp16 and log(0) = -inf, whose gradient is NaN [mpnanny-log-softmax]
// CHECK: :[[@LINE-2]]:12: note: use torch::log_softmax (same dim and dtype): it computes x - logsumexp(x) without forming the probabilities
// CHECK-FIXES: {{^}}  auto a = torch::log_softmax(h, -1);
  auto b = h.softmax(1).log();
// CHECK: :[[@LINE-1]]:25: warning: Tensor::log of Tensor::softmax probabilities (computed in fp16){{.*}} [mpnanny-log-softmax]
// CHECK-FIXES: {{^}}  auto b = h.log_softmax(1);
  auto c = at::log(at::softmax(h, 1, torch::kFloat));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of torch::softmax probabilities (computed in fp32): a probability below 7.01e-46 is exactly 0 in fp32{{.*}} [mpnanny-log-softmax]
// CHECK-FIXES: {{^}}  auto c = at::log_softmax(h, 1, torch::kFloat);
  auto d = torch::log(torch::softmax(h, -1) + 1e-8);
// CHECK: :[[@LINE-1]]:12: warning: torch::log of torch::softmax {{.*}}; the added 1e-8 is 0 in fp16 and guards nothing [mpnanny-log-softmax]
// CHECK-FIXES: {{^}}  auto d = torch::log(torch::softmax(h, -1) + 1e-8);
  auto e = torch::log(torch::clamp(torch::softmax(h, -1), 1e-6, 1.0));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of torch::softmax {{.*}}; the clamp hides the -inf but stops the gradient of every clamped entry [mpnanny-log-softmax]
  auto p = F::softmax(h, F::SoftmaxFuncOptions(-1));
  auto lp = p.log();
// CHECK: :[[@LINE-1]]:15: warning: Tensor::log of torch::nn::functional::softmax probabilities{{.*}} [mpnanny-log-softmax]
// CHECK: :[[@LINE-2]]:15: note: use torch::nn::functional::log_softmax (same dim and dtype)
  auto loss = torch::nll_loss(torch::log(torch::softmax(h, 1)), target);
// CHECK: :[[@LINE-1]]:15: warning: torch::nll_loss of torch::log of torch::softmax probabilities{{.*}} [mpnanny-log-softmax]
// CHECK: :[[@LINE-2]]:15: note: use torch::nn::functional::cross_entropy(logits, target)
  // The stable forms, and logs of other things.
  auto f = torch::log_softmax(h, -1) + h.log_softmax(1) + torch::log(torch::sigmoid(h) + 1e-3);
  auto g = F::cross_entropy(h, target) + torch::log(h.softmax(1).sum(1, true));
  return a + b + c + d + e + lp + loss + f + g;
}

// Under autocast softmax runs in fp32, but log(softmax) is still log of a rounded probability.
torch::Tensor autocast_head(torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto p = x.softmax(-1);
  auto lp = torch::log(p);
// CHECK: :[[@LINE-1]]:13: warning: torch::log of Tensor::softmax probabilities (computed in fp32){{.*}} [mpnanny-log-softmax]
// CHECK-FIXES: {{^}}  auto lp = torch::log(p);
  at::autocast::set_enabled(false);
  return lp;
}

// Plain fp32 code: not a mixed-precision finding.
torch::Tensor fp32_head(torch::Tensor x) {
  return torch::log(torch::softmax(x, -1));
}
// CHECK-FIXES: {{^}}  return torch::log(torch::softmax(x, -1));
