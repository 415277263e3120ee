// RUN: %mpnanny_check --checks='-*,mpnanny-unsafe-math,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-unsafe-math,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>

// A module's eps member, set in its constructor or by a default member initializer, reaches the
// hand-written norm of another method: in a model converted to half it is 0 there.
struct L2NormImpl : torch::nn::Module {
  explicit L2NormImpl(double eps = 1e-12) : eps_(eps) {}
  torch::Tensor forward(torch::Tensor x) { return x / (x.norm(2, {-1}, true) + eps_); }
// CHECK: :[[@LINE-1]]:80: warning: adding 1e-12 (member 'eps_' initialised at line {{[0-9]+}}, the default of 'eps' in 'L2NormImpl') to a fp16 tensor is no protection: the sum rounds back to 0 where the tensor is 0 (fp16's smallest subnormal is 5.96e-8) [mpnanny-fp16-constant-range]
  double eps_;
};
TORCH_MODULE(L2Norm);

struct RmsNormImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto var = x.pow(2).mean(-1, true);
    return x * torch::rsqrt(var + eps_);
// CHECK: :[[@LINE-1]]:35: warning: adding 1e-8 (member 'eps_' initialised at line {{[0-9]+}}) to a fp16 tensor is no protection: the sum rounds back to 0 where the tensor is 0 (fp16's smallest subnormal is 5.96e-8) [mpnanny-fp16-constant-range]
  }
  double eps_ = 1e-8;
};
TORCH_MODULE(RmsNorm);

struct SafeNormImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) { return x * torch::rsqrt(x.var(-1, true, true) + eps_); }
  float eps_ = 1e-3f;
};
TORCH_MODULE(SafeNorm);

// A frozen BatchNorm written by hand: the running variance is 0 on a channel that is constant
// over the batches, and rsqrt(0) is inf. Known by LibTorch's buffer name, under which
// checkpoints load it, or by the key it is registered with.
struct FrozenBatchNormImpl : torch::nn::Module {
  explicit FrozenBatchNormImpl(int64_t channels) {
    running_mean_ = register_buffer("running_mean", torch::zeros({channels}));
    running_var_ = register_buffer("running_var", torch::ones({channels}));
    var_buffer_ = register_buffer("running_var", torch::ones({channels}));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto scaled = (x - running_mean_) * torch::rsqrt(running_var_);
// CHECK: :[[@LINE-1]]:41: warning: torch::rsqrt of a value that may be 0 in fp16: it lies in [0, inf) (the running variance 'running_var_', 0 on a channel that is constant over the batches), and rsqrt(0) = inf [mpnanny-unsafe-math]
    auto divided = (x - running_mean_) / torch::sqrt(running_var_);
// CHECK: :[[@LINE-1]]:40: warning: division by a value that may be 0 in fp16: the divisor lies in [0, inf) (torch::sqrt gives [0, inf)), and x / 0 is inf (0 / 0 is NaN) [mpnanny-unsafe-math]
    auto registered = var_buffer_.rsqrt();
// CHECK: :[[@LINE-1]]:35: warning: Tensor::rsqrt of a value that may be 0 in fp16: it lies in [0, inf) (the running variance 'var_buffer_', 0 on a channel that is constant over the batches), and rsqrt(0) = inf [mpnanny-unsafe-math]
    auto guarded = torch::rsqrt(running_var_ + 1e-5) + x * (running_var_ + 1e-5).rsqrt();
    auto other = torch::rsqrt(running_mean_);
    return scaled + divided + registered + guarded + other;
  }
  torch::Tensor running_mean_, running_var_, var_buffer_;
};
TORCH_MODULE(FrozenBatchNorm);

// The same module in an fp32 model: rsqrt(0) is inf there too, but the half formats are what
// this check is about.
struct Fp32FrozenBatchNormImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) { return x * torch::rsqrt(running_var); }
  torch::Tensor running_var;
};
TORCH_MODULE(Fp32FrozenBatchNorm);

void build_half_models() {
  L2Norm a;
  a->to(torch::kHalf);
  RmsNorm b;
  b->to(torch::kHalf);
  SafeNorm c;
  c->to(torch::kHalf);
  FrozenBatchNorm d(8);
  d->to(torch::kHalf);
  Fp32FrozenBatchNorm e;
}
