// RUN: %mpnanny_check --checks='-*,mpnanny-naive-softmax' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-naive-softmax' %s -- %check_flags | %FileCheckAll %s
// RUN: cp %s %t.cpp
// RUN: not %mpnanny_check --checks='-*,mpnanny-naive-softmax' --fix %t.cpp -- %check_flags > /dev/null
// RUN: FileCheck -check-prefix=CHECK-FIXES -input-file=%t.cpp %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor half_attention(torch::Tensor scores) {
  auto s = scores.to(torch::kHalf);
  auto a = torch::exp(s) / torch::exp(s).sum(-1, true);
// CHECK: :[[@LINE-1]]:26: warning: softmax written as exp(x) / exp(x).sum() without subtracting the maximum: torch::exp in fp16 overflows to inf for x > 11.09 (exp(11.09) = 65504), and inf / inf is NaN [mpnanny-naive-softmax]
// CHECK: :[[@LINE-2]]:26: note: use torch::softmax(x, dim) (it subtracts the row maximum), or shift first: x - x.amax(dim, /*keepdim=*/true)
// CHECK-FIXES: {{^}}  auto a = torch::softmax(s, -1);
  auto b = s.exp().div(s.exp().sum({1}, /*keepdim=*/true));
// CHECK: :[[@LINE-1]]:20: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
// CHECK-FIXES: {{^}}  auto b = torch::softmax(s, 1);
  auto e = s.exp();
  auto c = e / e.sum(-1, true);
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
// CHECK-FIXES: {{^}}  auto c = e / e.sum(-1, true);
  auto d = torch::exp(s) / torch::exp(s).sum();
// CHECK: :[[@LINE-1]]:26: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
  auto k = torch::exp(s) / torch::exp(s).sum(-1, false).unsqueeze(-1);
// CHECK: :[[@LINE-1]]:26: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
// CHECK-FIXES: {{^}}  auto k = torch::exp(s) / torch::exp(s).sum(-1, false).unsqueeze(-1);
  auto z = s.clamp(-30, 30).exp();
  auto f = z / z.sum(-1, true);
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}}; here x reaches 30 [mpnanny-naive-softmax]
  // Safe: shifted by the maximum, bounded below 11.09, or not the same exp.
  auto shifted = s - s.amax(-1, true);
  auto es = shifted.exp();
  auto g = es / es.sum(-1, true);
  auto m = std::get<0>(s.max(-1, true));
  auto em = (s - m).exp();
  auto h = em / em.sum(-1, true);
  auto eb = s.clamp(-10, 10).exp();
  auto i = eb / eb.sum(-1, true);
  auto j = torch::exp(s) / torch::exp(scores).sum(-1, true);
  return a + b + c + d + k + f + g + h + i + j;
}

// bf16 and autocast: exp overflows only above 88.72, as in fp32.
torch::Tensor bf16_attention(torch::Tensor scores) {
  auto s = scores.to(torch::kBFloat16);
  return torch::exp(s) / torch::exp(s).sum(-1, true);
}
torch::Tensor autocast_attention(torch::Tensor scores) {
  at::autocast::set_enabled(true);
  auto p = torch::exp(scores) / torch::exp(scores).sum(-1, true);
  at::autocast::set_enabled(false);
  return p;
}

// Plain fp32 code: not reported.
torch::Tensor fp32_attention(torch::Tensor s) {
  return torch::exp(s) / torch::exp(s).sum(-1, true);
}

// A guard against a zero sum (the masked-softmax idiom) does not guard against an inf one:
// inf / (inf + 1e-6) is NaN as well. No fix-it: torch::softmax drops the eps.
torch::Tensor half_guarded_softmax(torch::Tensor scores) {
  auto s = scores.to(torch::kHalf);
  auto e = s.exp();
  auto a = e / (e.sum(-1, true) + 1e-6);
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
// CHECK-FIXES: {{^}}  auto a = e / (e.sum(-1, true) + 1e-6);
  auto b = e / (1e-6 + e.sum(-1, true));
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
  auto c = e / e.sum(-1, true).clamp_min(1e-6);
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
  auto d = e.div(e.sum(-1, false).add(1e-6).unsqueeze(-1));
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
  auto guarded_sum = e.sum(-1, true) + 1e-6;
  auto f = e / guarded_sum;
// CHECK: :[[@LINE-1]]:14: warning: softmax written as exp(x) / exp(x).sum(){{.*}} [mpnanny-naive-softmax]
  // Safe: shifted by the maximum; or the denominator is more than the sum plus a number.
  auto es = (s - s.amax(-1, true)).exp();
  auto g = es / (es.sum(-1, true) + 1e-6);
  auto h = e / (e.sum(-1, true) + s);
  auto i = e / (e.sum(-1, true) * 2.0 + 1e-6);
  return a + b + c + d + f + g + h + i;
}

// bf16 and fp32: exp overflows at the same 88.72 as in fp32, eps or not.
torch::Tensor bf16_guarded_softmax(torch::Tensor scores) {
  auto e = scores.to(torch::kBFloat16).exp();
  return e / (e.sum(-1, true) + 1e-6);
}
torch::Tensor fp32_guarded_softmax(torch::Tensor s) {
  auto e = s.exp();
  return e / (e.sum(-1, true) + 1e-6);
}
