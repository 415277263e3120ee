// RUN: %mpnanny_check --checks='-*,mpnanny-softmax-dtype' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-softmax-dtype' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

// A model converted to fp16: softmax, products and norms run in fp16; log_softmax too, safely.
// A probability fp16 rounds to 0 matters where it is summed up to a cut (top-p), divided by or
// compared; as attention weights it does not.
struct HalfHeadImpl : torch::nn::Module {
  torch::nn::Softmax softmax{torch::nn::SoftmaxOptions(-1)};
  torch::nn::LogSoftmax log_softmax{torch::nn::LogSoftmaxOptions(-1)};
  torch::Tensor forward(torch::Tensor x) {
    auto p = torch::softmax(x, -1);
// CHECK: :[[@LINE-1]]:14: warning: torch::softmax in fp16 stores its probabilities in fp16 (the kernel sums in float): a probability below 2.98e-8{{.*}}; here they reach a cumsum (line [[@LINE+2]]) [mpnanny-softmax-dtype]
    auto [sorted, order] = torch::sort(p, -1, /*descending=*/true);
    auto cdf = sorted.cumsum(-1);
    auto m = x.softmax(1);
// CHECK: :[[@LINE-1]]:16: warning: Tensor::softmax in fp16{{.*}}; here they reach a division (line [[@LINE+1]]) [mpnanny-softmax-dtype]
    auto ratio = x / m;
    auto f = F::softmax(x, F::SoftmaxFuncOptions(1));
// CHECK: :[[@LINE-1]]:14: warning: torch::nn::functional::softmax in fp16{{.*}}; here they reach a comparison (line [[@LINE+1]]) [mpnanny-softmax-dtype]
    auto rare = f < 1e-6;
    // Attention weights: a weight rounded to 0 leaves the weighted sum as it was.
    auto attention = torch::matmul(torch::softmax(x, -1), x);
    // log_softmax is not a hazard in fp16: the kernel works in float and a log-probability
    // never flushes (fp16 holds down to -65504); only its 11-bit rounding is left, a note.
    auto lp = x.log_softmax(-1);
    auto mod = softmax(x);
// CHECK: :[[@LINE-1]]:16: warning: torch::nn::Softmax in fp16{{.*}}; here they reach a cumsum (line [[@LINE+1]]) [mpnanny-softmax-dtype]
    auto mod_cdf = mod.to(torch::kFloat).cumsum(-1);
    auto lmod = log_softmax(x);
    auto total = x.prod();
// CHECK: :[[@LINE-1]]:20: warning: Tensor::prod in fp16 leaves fp16's range fast: a product above 65504 is inf {{.*}} [mpnanny-softmax-dtype]
    auto size = x.norm();
// CHECK: :[[@LINE-1]]:19: warning: Tensor::norm in fp16 returns the norm in fp16: a norm above 65504 is inf {{.*}} [mpnanny-softmax-dtype]
    auto decay = x.cumprod(-1);
// CHECK: :[[@LINE-1]]:20: warning: Tensor::cumprod in fp16{{.*}} [mpnanny-softmax-dtype]

    // Safe: an fp32 dtype, or an fp32 upcast of the input.
    auto a = torch::softmax(x, -1, torch::kFloat);
    auto b = torch::softmax(x.to(torch::kFloat), -1);
    auto up = x.to(torch::kFloat32);
    auto c = up.softmax(-1);
    auto d = F::softmax(x, F::SoftmaxFuncOptions(1).dtype(torch::kFloat));
    auto e = x.log_softmax(-1, torch::kFloat);
    auto g = x.prod(-1, false, torch::kFloat);
    auto h = softmax(x.to(torch::kFloat));
    auto k = up.norm();
    // A norm over a named dimension is left alone, like a sum over one: ATen adds in float
    // and a row passes 65504 only when its values are near fp16's limit themselves.
    auto row_norm = x.norm(2, -1, true) + torch::norm(x, 2, {-1}) + torch::linalg_vector_norm(x, 2, {{-1}});
    // Counts: a product or softmax is never taken of a mask here, but a bool product is exact.
    auto all_true = (x == 0).prod();
    return cdf + order + std::get<0>(m.sort()).cumsum(0) + ratio + rare + attention + lp + mod_cdf + lmod + total + size + decay + a + b + c + row_norm +
           d + e + g + h + k + all_true;
  }
};
TORCH_MODULE(HalfHead);

void train_half() {
  HalfHead head;
  head->to(torch::kHalf);
}

// bf16 has fp32's range and the kernels accumulate in fp32: not reported.
torch::Tensor bf16_attention(torch::Tensor q, torch::Tensor k) {
  auto scores = torch::matmul(q.to(torch::kBFloat16), k);
  return torch::softmax(scores, -1) + scores.norm() + scores.prod();
}

// Under autocast softmax, log_softmax, prod and norm run in fp32, unless a dtype is given.
torch::Tensor autocast_attention(torch::Tensor q, torch::Tensor k) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto p = torch::softmax(scores, -1);
  auto lp = scores.log_softmax(-1);
  auto n = scores.norm();
  auto forced = torch::softmax(scores, -1, torch::kHalf);
// CHECK: :[[@LINE-1]]:17: warning: torch::softmax in fp16{{.*}}; here they reach a cumsum (line [[@LINE+1]]) [mpnanny-softmax-dtype]
  auto cdf = forced.cumsum(-1);
  at::autocast::set_enabled(false);
  return p + lp + n + cdf;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_only(torch::Tensor x) {
  return torch::softmax(x, -1) + x.log_softmax(-1) + x.prod() + x.norm();
}

// The value that reaches the op decides its dtype: a local upcast in place before softmax.
torch::Tensor upcast_before_softmax(torch::Tensor logits) {
  auto x = logits.to(torch::kHalf);
  x = x.to(torch::kFloat);
  auto p = torch::softmax(x, -1);
  auto y = logits.to(torch::kHalf);
  auto q = torch::softmax(y, -1);
// CHECK: :[[@LINE-1]]:12: warning: torch::softmax in fp16{{.*}}; here they reach a cumsum (line [[@LINE+1]]) [mpnanny-softmax-dtype]
  return p.cumsum(-1) + q.cumsum(-1);
}

// A parameter reassigned through a helper that upcasts: the helper's returns say fp32.
torch::Tensor upcast_through_helper(torch::Tensor g, torch::Tensor k) {
  auto to_float32 = [](torch::Tensor x) { return x.contiguous().to(torch::kFloat32); };
  auto keep = [](torch::Tensor x) { return x.contiguous(); };
  g = to_float32(g.to(torch::kHalf));
  k = keep(k.to(torch::kHalf));
  auto p = torch::softmax(g, -1);
  auto q = torch::softmax(k, -1);
// CHECK: :[[@LINE-1]]:12: warning: torch::softmax in fp16{{.*}}; here they reach a cumsum (line [[@LINE+1]]) [mpnanny-softmax-dtype]
  return p.cumsum(-1) + q.cumsum(-1);
}

// A local given fp32 on every path (an if/else that builds it, then updates of it from
// itself) stays fp32 in a half model, though no one value reaches the op; a local that one
// path gives fp16 is judged in fp16.
struct HalfSchedulerImpl : torch::nn::Module {
  torch::Tensor alphas_cumprod(bool linear, int64_t n) {
    torch::Tensor betas;
    if (linear)
      betas = torch::ones({n}, torch::kFloat32) * 0.02;
    else
      betas = torch::randn({n}, torch::kFloat32);
    if (n > 10)
      betas = betas * betas;
    if (n > 100)
      betas = rescale(betas);
    auto safe = torch::cumprod(1.0f - betas, 0);
    torch::Tensor mixed;
    if (linear)
      mixed = torch::ones({n}, torch::kFloat32);
    else
      mixed = torch::randn({n}, torch::kHalf);
    auto risky = torch::cumprod(1.0f - mixed, 0);
// CHECK: :[[@LINE-1]]:18: warning: torch::cumprod in fp16{{.*}} [mpnanny-softmax-dtype]
    return safe + risky;
  }
  // Through a helper whose result a cat builds from values of its fp32 argument.
  torch::Tensor rescale(const torch::Tensor &betas) {
    auto alphas = torch::cumprod(1.0f - betas, 0);
    return 1.0f - torch::cat({alphas, alphas * 0.5f});
  }
};
TORCH_MODULE(HalfScheduler);

void run_half_scheduler() {
  HalfScheduler scheduler;
  scheduler->to(torch::kHalf);
}
