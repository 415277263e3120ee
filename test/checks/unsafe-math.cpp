// RUN: %mpnanny_check --checks='-*,mpnanny-unsafe-math' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-unsafe-math' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// fp16 data: the range analysis decides.
torch::Tensor half_math(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  // Unknown stays unknown for the domain checks: nothing to report (exp: see below).
  auto a = torch::log(h) + h.sqrt() + h.rsqrt() + h.reciprocal() + x / h;
  // A probability guarded by an eps fp16 can hold.
  auto b = torch::log(torch::sigmoid(h) + 1e-3);
  auto p = torch::softmax(h, -1);
  auto c = torch::log(p);
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::softmax gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
// CHECK: :[[@LINE-2]]:12: note: keep it positive: add or clamp_min an eps of at least 6.1e-5 (fp16's smallest normal), or compute in fp32 with .to(torch::kFloat); for the log of a probability use log_softmax or logsigmoid
  auto d = torch::log(torch::sigmoid(h) + 1e-8);
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]; 1e-8 is 0 in fp16){{.*}} [mpnanny-unsafe-math]
  auto e = (1 - torch::sigmoid(h)).log();
// CHECK: :[[@LINE-1]]:36: warning: Tensor::log of a value that may be 0 in fp16: it lies in [0, 1]{{.*}} [mpnanny-unsafe-math]
  auto f = torch::tanh(h).log();
// CHECK: :[[@LINE-1]]:27: warning: Tensor::log of a value that may be negative in fp16: it lies in [-1, 1] (torch::tanh gives [-1, 1]), and Tensor::log of a negative number is NaN [mpnanny-unsafe-math]
  auto g = p.clamp_min(1e-4).log() + p.clamp(1e-4, 1).log();
  auto k = p.clamp_min(1e-10).log();
// CHECK: :[[@LINE-1]]:31: warning: Tensor::log of a value that may be 0 in fp16: it lies in [0, 1] (the clamp bound 1e-10 is 0 in fp16){{.*}} [mpnanny-unsafe-math]
  // exp passes 65504 above 11.09.
  auto m = h.clamp(-20, 20).exp();
// CHECK: :[[@LINE-1]]:29: warning: Tensor::exp in fp16 overflows to inf: its argument reaches 20, above 11.09 = ln(65504), fp16's largest finite value; the argument lies in [-20, 20] [mpnanny-unsafe-math]
  auto n = h.clamp(-10, 10).exp() + torch::exp(torch::sigmoid(h) * 5);
  auto q = torch::exp(torch::sigmoid(h) * 20);
// CHECK: :[[@LINE-1]]:12: warning: torch::exp in fp16 overflows to inf: its argument reaches 20{{.*}} [mpnanny-unsafe-math]
  // Roots, reciprocals and divisions of values that may be 0.
  auto r = torch::sqrt(torch::relu(h));
// CHECK: :[[@LINE-1]]:12: warning: torch::sqrt of a value that may be 0 in fp16: it lies in [0, inf) (torch::relu gives [0, inf)); sqrt(0) is 0 but its gradient 1/(2*sqrt(x)) is inf, so backward gives NaN [mpnanny-unsafe-math]
  auto s = torch::rsqrt(h.var(-1) + 1e-8) + torch::rsqrt(h.var(-1) + 1e-5);
// CHECK: :[[@LINE-1]]:12: warning: torch::rsqrt of a value that may be 0 in fp16: it lies in [0, inf) ({{.*}}1e-8 is 0 in fp16), and rsqrt(0) = inf [mpnanny-unsafe-math]
  auto t = h / torch::relu(h) + h / (torch::relu(h) + 1e-3);
// CHECK: :[[@LINE-1]]:14: warning: division by a value that may be 0 in fp16: the divisor lies in [0, inf) (torch::relu gives [0, inf)), and x / 0 is inf (0 / 0 is NaN) [mpnanny-unsafe-math]
  auto u = h.div(h.abs()) + torch::relu(h).pow(-1) + torch::relu(h).reciprocal();
// CHECK: :[[@LINE-1]]:14: warning: division by a value that may be 0 in fp16: the divisor lies in [0, inf){{.*}} [mpnanny-unsafe-math]
// CHECK: :[[@LINE-2]]:44: warning: Tensor::pow of a value that may be 0 in fp16{{.*}}a negative power of 0 is inf [mpnanny-unsafe-math]
// CHECK: :[[@LINE-3]]:69: warning: Tensor::reciprocal of a value that may be 0 in fp16: it lies in [0, inf) (torch::relu gives [0, inf)), and 1 / 0 = inf [mpnanny-unsafe-math]
  // A local that is reassigned or updated in place is unknown.
  auto v = torch::softmax(h, -1);
  v = v + 1e-3;
  auto w = torch::softmax(h, -1);
  w.clamp_(1e-3);
  return a + b + c + d + e + f + g + k + m + n + q + r + s + t + u + torch::log(v) + torch::log(w);
}

// bf16 holds exp up to 88.72 and keeps probabilities above 0 down to 9.2e-41.
torch::Tensor bf16_math(torch::Tensor x) {
  auto h = x.to(torch::kBFloat16);
  auto a = torch::log(torch::softmax(h, -1)) + h.clamp(-20, 20).exp();
  auto b = h.clamp(-100, 100).exp();
// CHECK: :[[@LINE-1]]:31: warning: Tensor::exp in bf16 overflows to inf: its argument reaches 100, above 88.72 = ln(3.39e38){{.*}} [mpnanny-unsafe-math]
  // relu gives an exact 0 in every format.
  auto c = torch::log(torch::relu(h));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in bf16{{.*}} [mpnanny-unsafe-math]
  return a + b + c;
}

// Under autocast exp and log run in fp32, and so does softmax unless told otherwise.
torch::Tensor autocast_math(torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto a = torch::log(torch::softmax(x, -1)) + x.clamp(-20, 20).exp();
  auto b = torch::log(torch::softmax(x, -1, torch::kHalf));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1]{{.*}} [mpnanny-unsafe-math]
  at::autocast::set_enabled(false);
  return a + b;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_math(torch::Tensor x) {
  auto p = torch::softmax(x, -1);
  return torch::log(p) + x.clamp(-20, 20).exp() + torch::sqrt(torch::relu(x)) + x / x.abs();
}

// exp in pure fp16 of a value the range analysis shows unbounded above (a ReLU output, an
// abs, another exp): inf once it passes 11.09. Of an unknown value (a VAE's log-variance, a
// parameter) it is not reported; shifted by its maximum, or clamped, it is safe.
torch::Tensor half_exp_unbounded(torch::Tensor mu, torch::Tensor log_var) {
  auto lv = log_var.to(torch::kHalf);
  auto r = torch::exp(torch::relu(lv));
// CHECK: :[[@LINE-1]]:12: warning: torch::exp in fp16 overflows to inf once its argument passes 11.09 = ln(65504), fp16's largest finite value, and nothing bounds the argument: it lies in [0, inf) (torch::relu gives [0, inf)) [mpnanny-unsafe-math]
  auto a = lv.abs().exp_();
// CHECK: :[[@LINE-1]]:21: warning: Tensor::exp_ in fp16 overflows to inf once its argument passes 11.09{{.*}}: it lies in [0, inf) (Tensor::abs gives [0, inf)) [mpnanny-unsafe-math]
  auto unknown = lv.div(2).exp() + (1 + lv - lv.exp());
  auto shifted = (lv - lv.amax(-1, true)).exp();
  auto m = lv.amax(-1, true);
  auto shifted_by_local = (lv - m).exp();
  auto clamped = lv.clamp(-10, 10).exp();
  return mu + r + a + unknown + shifted + shifted_by_local + clamped;
}

// bf16 and fp32 hold exp up to 88.72: an unbounded argument is no finding there. Under
// autocast exp runs in fp32; exp_ keeps its input's type, fp32 for a parameter.
torch::Tensor exp_unbounded_elsewhere(torch::Tensor x, torch::Tensor y) {
  auto b = x.to(torch::kBFloat16).exp();
  at::autocast::set_enabled(true);
  auto a = x.exp() + torch::exp(torch::relu(x));
  y.exp_();
  at::autocast::set_enabled(false);
  return a + b + y + x.exp();
}

// A member or local assigned in straight-line code before the read holds that value: the
// clamp of a VAE's log-variance in its constructor lets exp reach 20, past 11.09. A value
// assigned in a branch, or changed by a loop around the read, is not followed.
struct HalfGaussian {
  explicit HalfGaussian(torch::Tensor params) {
    logvar_ = params.to(torch::kHalf);
    logvar_ = torch::clamp(logvar_, -30.0f, 20.0f);
    std_ = torch::exp(0.5f * logvar_);
    var_ = torch::exp(logvar_);
// CHECK: :[[@LINE-1]]:12: warning: torch::exp in fp16 overflows to inf: its argument reaches 20, above 11.09 = ln(65504), fp16's largest finite value; the argument lies in [-30, 20] [mpnanny-unsafe-math]
    auto t = params.to(torch::kHalf).clamp(-20, 20);
    if (params.numel() > 4)
      t = t.clamp(-5, 5);
    auto s = params.to(torch::kHalf).clamp(-1, 1);
    for (int i = 0; i < 4; ++i) {
      std_ = std_ + s.exp();
      s = s * 4;
    }
    var_ = var_ + t.exp();
  }
  torch::Tensor logvar_, std_, var_;
};

// A pow with a scalar first takes its format from the tensor after it: 1 / pow(2, m) of an
// fp32 m runs in fp32, where 2^m stays above 0; of the half model's own m, in fp16.
struct HalfSlopesImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor m) {
    auto exact = 1.0f / torch::pow(2, m.to(torch::kFloat32));
    auto flushed = 1.0f / torch::pow(2, m);
// CHECK: :[[@LINE-1]]:25: warning: division by a value that may be 0 in fp16{{.*}} [mpnanny-unsafe-math]
    return exact + flushed;
  }
};
TORCH_MODULE(HalfSlopes);

void run_half_slopes() {
  HalfSlopes slopes;
  slopes->to(torch::kHalf);
}

// A probability map computed in fp32 and then stored in fp16 loses its tail below 2.98e-8 to
// 0, as one computed in fp16 does. A cast to another tensor's dtype takes that tensor's format
// (h's is fp16, f's fp32), not the operand's. Kept in fp32, clamped first or cast to fp32: no
// finding.
torch::Tensor probabilities_stored_in_half(torch::Tensor logits) {
  auto h = logits.to(torch::kHalf);
  auto f = logits.to(torch::kFloat);
  auto p = torch::softmax(h, -1, torch::kFloat);
  auto a = torch::log(torch::softmax(h, -1, torch::kFloat).to(torch::kHalf));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::softmax gives (0, 1]; fp16 stores probabilities below 2.98e-8 as 0){{.*}} [mpnanny-unsafe-math]
  auto b = h / p.to(h.dtype()) + h / p.type_as(h);
// CHECK: :[[@LINE-1]]:14: warning: division by a value that may be 0 in fp16: the divisor lies in [0, 1]{{.*}} [mpnanny-unsafe-math]
// CHECK: :[[@LINE-2]]:36: warning: division by a value that may be 0 in fp16: the divisor lies in [0, 1]{{.*}} [mpnanny-unsafe-math]
  auto c = torch::log(p) + torch::log(p.to(f.dtype())) + torch::log(p.type_as(f)) +
           torch::log(p.clamp_min(1e-4).to(torch::kHalf));
  return a + b + c;
}
