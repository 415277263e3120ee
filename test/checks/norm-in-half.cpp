// RUN: %mpnanny_check --checks='-*,mpnanny-norm-in-half' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-norm-in-half' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// Hand-written RMSNorm and LayerNorm in a model converted to fp16.
struct RMSNormImpl : torch::nn::Module {
  torch::Tensor weight;
  double eps = 1e-6;
  torch::Tensor forward(torch::Tensor x) {
    auto var = x.pow(2).mean(-1, true);
// CHECK: :[[@LINE-1]]:25: warning: hand-written normalization statistic in fp16: 'x.pow(2)' is squared in fp16 before Tensor::mean averages it, and a square overflows 65504 once |x| > 255.9 {{.*}} [mpnanny-norm-in-half]
    auto rms = torch::rsqrt(x.square().mean(-1, true) + eps);
// CHECK: :[[@LINE-1]]:40: warning: hand-written normalization statistic in fp16: 'x.square()' {{.*}} [mpnanny-norm-in-half]
    auto ms = (x * x).mean(-1, true);
// CHECK: :[[@LINE-1]]:23: warning: hand-written normalization statistic in fp16: 'x * x' {{.*}} [mpnanny-norm-in-half]
    auto late = x.pow(2).mean(-1, true, torch::kFloat);
// CHECK: :[[@LINE-1]]:26: warning: hand-written normalization statistic in fp16{{.*}} [mpnanny-norm-in-half]
    auto mu = x.mean(-1, true);
    auto centered = x - mu;
    auto var2 = torch::mean(centered * centered, -1, true);
// CHECK: :[[@LINE-1]]:17: warning: hand-written normalization statistic in fp16: 'centered * centered' {{.*}} [mpnanny-norm-in-half]
    auto var3 = x.var(-1, false, true);
// CHECK: :[[@LINE-1]]:19: warning: Tensor::var in fp16 returns the variance in fp16{{.*}} [mpnanny-norm-in-half]

    // Safe: the statistic computed in fp32, the result cast back.
    auto xf = x.to(torch::kFloat);
    auto good = xf.pow(2).mean(-1, true);
    auto good2 = x.to(torch::kFloat).pow(2).mean(-1, true);
    auto good3 = (xf * xf).mean(-1, true);
    auto y = (xf * torch::rsqrt(good + eps)).to(x.scalar_type());
    auto plain_mean = x.mean(-1, true);
    auto cube = x.pow(3).mean(-1, true);
    return weight * y + var + rms + ms + late + var2 + var3 + good2 + good3 + plain_mean + cube;
  }
};
TORCH_MODULE(RMSNorm);

// BatchNorm members of a model converted to fp16 keep running statistics in fp16;
// LayerNorm computes its statistics in fp32 inside the kernel: not reported.
struct ConvNetImpl : torch::nn::Module {
  torch::nn::BatchNorm2d bn{64};
// CHECK: :[[@LINE-1]]:26: warning: member 'bn': torch::nn::BatchNorm2d in fp16 keeps its running statistics in fp16{{.*}} [mpnanny-norm-in-half]
  torch::nn::BatchNorm1d bn1{nullptr};
// CHECK: :[[@LINE-1]]:26: warning: member 'bn1': torch::nn::BatchNorm1d in fp16{{.*}} [mpnanny-norm-in-half]
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({64})};
  torch::Tensor forward(torch::Tensor x) { return ln(bn1(bn(x))); }
};
TORCH_MODULE(ConvNet);

struct Fp32NetImpl : torch::nn::Module {
  torch::nn::BatchNorm2d bn{64};
  torch::Tensor forward(torch::Tensor x) { return bn(x); }
};
TORCH_MODULE(Fp32Net);

void build() {
  RMSNorm norm;
  norm->to(torch::kHalf);
  ConvNet net;
  net->to(torch::kCUDA, torch::kHalf);
  Fp32Net fp32;
  fp32->to(torch::kCUDA);
  torch::nn::BatchNorm2d standalone(32);
  standalone->to(torch::kHalf);
// CHECK: :[[@LINE-1]]:15: warning: torch::nn::BatchNorm2d in fp16 keeps its running statistics in fp16{{.*}} [mpnanny-norm-in-half]
}

// bf16 holds every square: not reported.
torch::Tensor bf16_rms(torch::Tensor x) {
  auto h = x.to(torch::kBFloat16);
  return h * torch::rsqrt(h.pow(2).mean(-1, true) + 1e-6) + (h * h).mean(-1, true);
}

// Under autocast pow and square run in fp32; x * x follows x, fp16 only when the code shows it.
torch::Tensor autocast_rms(torch::Tensor q, torch::Tensor k, torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto a = x.pow(2).mean(-1, true);
  auto b = (x * x).mean(-1, true);
  auto h = x.to(torch::kHalf);
  auto c = (h * h).mean(-1, true);
// CHECK: :[[@LINE-1]]:20: warning: hand-written normalization statistic in fp16: 'h * h' {{.*}} [mpnanny-norm-in-half]
  at::autocast::set_enabled(false);
  return a + b + c;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_only(torch::Tensor x) {
  return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) + x.var(-1, false, true);
}

// The statistic in a helper: its parameter has the format every call site gives it.
struct LlamaNormImpl : torch::nn::Module {
  torch::Tensor weight;
  torch::Tensor norm_(torch::Tensor x) { return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6); }
  torch::Tensor forward(torch::Tensor x) {
    return weight * norm_(x.to(torch::kFloat)).to(x.scalar_type());
  }
};
TORCH_MODULE(LlamaNorm);
struct HalfHelperNormImpl : torch::nn::Module {
  torch::Tensor norm_(torch::Tensor x) { return x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6); }
// CHECK: :[[@LINE-1]]:75: warning: hand-written normalization statistic in fp16: 'x.pow(2)'{{.*}} [mpnanny-norm-in-half]
  torch::Tensor forward(torch::Tensor x) { return norm_(x) + norm_(x.to(torch::kFloat)); }
};
TORCH_MODULE(HalfHelperNorm);
void build_helpers() {
  LlamaNorm a;
  a->to(torch::kHalf);
  HalfHelperNorm b;
  b->to(torch::kHalf);
}
