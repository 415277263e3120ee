// RUN: %mpnanny_check --checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <limits>

torch::Tensor half_attention(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  auto a = h.masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:32: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16 (largest finite value 65504){{.*}} [mpnanny-fp16-constant-range]
  auto b = torch::masked_fill(h, mask, -1e10);
// CHECK: :[[@LINE-1]]:40: warning: torch::masked_fill fill value -1e10 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  auto c = h.masked_fill(mask, -1e4);
  auto d = h.masked_fill(mask, -65504.0);
  auto e = h.to(torch::kFloat).masked_fill(mask, -1e9);
  auto f = h + 1e-8;
// CHECK: :[[@LINE-1]]:16: warning: adding 1e-8 to a fp16 tensor is no protection{{.*}} [mpnanny-fp16-constant-range]
  auto g = h + 1e-3;
  auto k = h.clamp(1e-9, 1e5);
// CHECK: :[[@LINE-1]]:20: warning: Tensor::clamp bound value 1e-9 rounds to 0 in fp16{{.*}} [mpnanny-fp16-constant-range]
// CHECK: :[[@LINE-2]]:26: warning: Tensor::clamp bound value 100000 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  return a + b + c + d + e + f + g + k;
}

// bf16 holds -1e9 and 1e-8: nothing to report.
torch::Tensor bf16_attention(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kBFloat16);
  return h.masked_fill(mask, -1e9) + 1e-8;
}

// Under fp16 autocast the scores come out of a matmul in fp16: -1e9 fails there too.
torch::Tensor autocast_attention(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto masked = scores.masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:42: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  auto upcast = scores.to(torch::kFloat).masked_fill(mask, -1e9);
  at::autocast::set_enabled(false);
  return masked + upcast;
}

// Autocast runs softmax in fp32 (its fp32 list): a clamp of the probabilities, directly or
// through a local, is fp32, where 1e-8 holds; a clamp of the matmul's fp16 output is not.
torch::Tensor autocast_probabilities(torch::Tensor q, torch::Tensor k) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto probs = torch::softmax(scores, -1);
  auto kept = torch::clamp(probs, 1e-8, 1.0);
  auto inline_kept = scores.softmax(-1).clamp(1e-8);
  auto raw = torch::clamp(scores, 1e-8);
// CHECK: :[[@LINE-1]]:35: warning: torch::clamp bound value 1e-8 rounds to 0 in fp16{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_enabled(false);
  return kept + inline_kept + raw;
}

// The fused norms take eps as a double and add it in float (acc_type) for half input:
// BERT's 1e-12 is not 0 there. A hand-written norm adds it in half, where it is 0.
struct HalfModelImpl : torch::nn::Module {
  torch::nn::LayerNorm norm{torch::nn::LayerNormOptions({8}).eps(1e-12)};
  torch::Tensor forward(torch::Tensor x) {
    auto fused = torch::layer_norm(norm(x), {8}, {}, {}, 1e-12);
    auto by_hand = x / (x.pow(2).mean(-1, true) + 1e-12).sqrt();
// CHECK: :[[@LINE-1]]:51: warning: adding 1e-12 to a fp16 tensor is no protection{{.*}} [mpnanny-fp16-constant-range]
    return fused + by_hand;
  }
};
TORCH_MODULE(HalfModel);

void train_half_model() {
  HalfModel model;
  model->to(torch::kHalf);
  torch::optim::Adam bad(model->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-8));
// CHECK: :[[@LINE-1]]:83: warning: AdamOptions::eps(1e-8) is 0 in fp16{{.*}} [mpnanny-fp16-constant-range]
  torch::optim::Adam good(model->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-4));
}

// An fp32 model: eps 1e-8 and -1e9 are fine.
void train_fp32_model(torch::Tensor x, torch::Tensor mask) {
  torch::nn::Linear model(4, 4);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-8));
  auto y = x.masked_fill(mask, -1e9) + 1e-8;
}

// A factory without options or dtype makes an fp32 tensor (LibTorch's default dtype)
// even in a half model's code: -1e9 fits. With options or a half dtype it may not.
torch::Tensor half_model_masks(torch::Tensor scores, torch::Tensor mask, int64_t T) {
  auto h = scores.to(torch::kHalf);
  auto causal = torch::full({T, T}, -1e9);
  auto zeroed = torch::zeros({T, T}).masked_fill(mask, -1e9);
  auto as_float = torch::full({T, T}, -1e9, torch::kFloat);
  auto like_h = torch::full({T, T}, -1e9, h.options());
// CHECK: :[[@LINE-1]]:37: warning: torch::full fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  auto as_half = torch::full({T, T}, -1e9, torch::kHalf);
// CHECK: :[[@LINE-1]]:38: warning: torch::full fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  auto unknown = scores.masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:43: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  return causal + zeroed + as_float + like_h + as_half + unknown;
}

// An additive mask (BERT's `(1 - mask) * -1e9`) on half data: -1e9 is inf in fp16, so the
// mask is -inf where it should be 0 and NaN (0 * inf) on kernels that round the scalar.
torch::Tensor half_additive_mask(torch::Tensor scores, torch::Tensor keep) {
  auto h = scores.to(torch::kHalf);
  auto m = keep.to(torch::kHalf);
  auto ext = (1.0 - m) * -1e9;
// CHECK: :[[@LINE-1]]:26: warning: multiplying a fp16 tensor by -1e9, which fp16 cannot represent (largest finite value 65504){{.*}} [mpnanny-fp16-constant-range]
  auto flipped = -1e9 * m;
// CHECK: :[[@LINE-1]]:18: warning: multiplying a fp16 tensor by -1e9{{.*}} [mpnanny-fp16-constant-range]
  auto inline_mask = h + (1 - m) * -1e10;
// CHECK: :[[@LINE-1]]:36: warning: multiplying a fp16 tensor by -1e10{{.*}} [mpnanny-fp16-constant-range]
  auto shifted = h - 1e5;
// CHECK: :[[@LINE-1]]:22: warning: subtracting 100000 from a fp16 tensor: fp16 cannot represent 100000{{.*}} [mpnanny-fp16-constant-range]
  h *= 1e6;
// CHECK: :[[@LINE-1]]:8: warning: multiplying a fp16 tensor by 1000000{{.*}} [mpnanny-fp16-constant-range]
  // Within range, on an upcast tensor, or plain doubles: nothing to report.
  auto small = (1.0 - m) * -1e4 + m * -65504.0;
  auto upcast = (1.0 - m.to(torch::kFloat)) * -1e9;
  double on_doubles = 2.0 * -1e9;
  return ext + flipped + inline_mask + shifted + small + upcast + on_doubles;
}

// bf16 holds -1e9; an fp32 function's mask is fp32.
torch::Tensor bf16_additive_mask(torch::Tensor scores, torch::Tensor keep) {
  auto m = keep.to(torch::kBFloat16);
  return scores.to(torch::kBFloat16) + (1.0 - m) * -1e9;
}
torch::Tensor fp32_additive_mask(torch::Tensor scores, torch::Tensor keep) {
  return scores + (1.0 - keep) * -1e9;
}

// Under autocast the operators keep the tensor's type: an input mask stays fp32 (fine),
// a mask converted to half does not.
torch::Tensor autocast_additive_mask(torch::Tensor q, torch::Tensor k, torch::Tensor keep) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto fp32_mask = scores + (1.0 - keep) * -1e9;
  auto half_mask = scores + (1.0 - keep.to(torch::kHalf)) * -1e9;
// CHECK: :[[@LINE-1]]:61: warning: multiplying a fp16 tensor by -1e9{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_enabled(false);
  return fp32_mask + half_mask;
}

// Under autocast, clamp (which autocast does not cover) runs in its input's type: a spectrogram
// the caller passes in is fp32 unless the code shows otherwise; a matmul's output is fp16.
torch::Tensor autocast_log_spectrum(torch::Tensor spectrogram, torch::Tensor basis) {
  at::autocast::set_enabled(true);
  auto log_power = torch::clamp(spectrogram, 1e-10).log();
  auto projected = torch::matmul(spectrogram, basis);
  auto log_projected = torch::clamp(projected, 1e-10).log();
// CHECK: :[[@LINE-1]]:48: warning: torch::clamp bound value 1e-10 rounds to 0 in fp16{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_enabled(false);
  return log_power + log_projected;
}

// `if (x.scalar_type() != kFloat32) x = x.to(kFloat32);`: past the guard the local is fp32 on
// both paths. A guard inside another condition may not run, and a later value counts.
torch::Tensor guarded_upcast(torch::Tensor x, bool renormalize) {
  auto h = x.to(torch::kHalf);
  auto gate_input = torch::matmul(h, h);
  if (gate_input.scalar_type() != torch::kFloat32) {
    gate_input = gate_input.to(torch::kFloat32);
  }
  auto floor = gate_input.clamp_min(1e-20);
  auto maybe = torch::matmul(h, h);
  if (renormalize) {
    if (maybe.scalar_type() != torch::kFloat)
      maybe = maybe.to(torch::kFloat);
  }
  auto maybe_floor = maybe.clamp_min(1e-20);
// CHECK: :[[@LINE-1]]:38: warning: Tensor::clamp_min eps value 1e-20 rounds to 0 in fp16{{.*}} [mpnanny-fp16-constant-range]
  return floor + maybe_floor;
}

// A kernel of another library, with no body in this unit and no dtype argument, follows its
// inputs as ATen's ops do: fp32 in, fp32 out. Of half inputs nothing is assumed beyond the code's
// precision.
torch::Tensor fused_linear(const torch::Tensor &input, const torch::Tensor &weight);
torch::Tensor opaque_kernel(torch::Tensor x, torch::Tensor w) {
  auto h = x.to(torch::kHalf);
  auto from_fp32 = fused_linear(x.to(torch::kFloat), w.to(torch::kFloat)).clamp_min(1e-20);
  auto from_half = fused_linear(h, h).clamp_min(1e-20);
// CHECK: :[[@LINE-1]]:49: warning: Tensor::clamp_min eps value 1e-20 rounds to 0 in fp16{{.*}} [mpnanny-fp16-constant-range]
  return from_fp32 + from_half;
}

// Bounds written to keep a probability off 1, which the format rounds to 1 (the largest fp16
// value below 1 is 0.99951172, bf16's 0.99609375): log1p(-p) is -inf at p = 1. Through a local
// and std::numeric_limits too. Bounds the format keeps, the same clamp on fp32 data and a floor
// that becomes a subnormal but stays above 0 (float's epsilon is 2^-23, held exactly) are fine.
torch::Tensor half_probability_bounds(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kHalf));
  auto a = p.clamp(1e-7, 1 - 1e-7);
// CHECK: :[[@LINE-1]]:26: warning: Tensor::clamp upper bound 1 - 1e-7 = 0.9999999 is 1 in fp16 (the nearest fp16 value inside is 0.99951172): the clamped value reaches 1, where log(1 - p) and log1p(-p) are -inf [mpnanny-fp16-constant-range]
  auto b = torch::clamp(p, 1.21e-7, 1. - 1.21e-7);
// CHECK: :[[@LINE-1]]:37: warning: torch::clamp upper bound 1. - 1.21e-7 = 0.999999879 is 1 in fp16 (the nearest fp16 value inside is 0.99951172): the clamped value reaches 1, where log(1 - p) and log1p(-p) are -inf [mpnanny-fp16-constant-range]
  const float eps = std::numeric_limits<float>::epsilon();
  auto c = p.clamp(eps, 1 - eps);
// CHECK: :[[@LINE-1]]:25: warning: Tensor::clamp upper bound 1 - eps = 0.9999998807907104 is 1 in fp16 (the nearest fp16 value inside is 0.99951172): the clamped value reaches 1, where log(1 - p) and log1p(-p) are -inf [mpnanny-fp16-constant-range]
  auto d = p.clamp_max(0.9999) + torch::tanh(logits.to(torch::kHalf)).clamp(-1 + 1e-6, 0.5);
// CHECK: :[[@LINE-1]]:24: warning: Tensor::clamp_max upper bound 0.9999 is 1 in fp16 (the nearest fp16 value inside is 0.99951172): the clamped value reaches 1, where log(1 - p) and log1p(-p) are -inf [mpnanny-fp16-constant-range]
// CHECK: :[[@LINE-2]]:77: warning: Tensor::clamp lower bound -1 + 1e-6 = -0.999999 is -1 in fp16 (the nearest fp16 value inside is -0.99951172): the clamped value reaches -1, where log1p(x) and atanh(x) are -inf [mpnanny-fp16-constant-range]
  auto e = p.clamp(1e-4, 1 - 1e-3) + p.clamp(eps, 0.999);
  auto f = p.to(torch::kFloat).clamp(1e-7, 1 - 1e-7);
  return torch::log1p(-a) + b + c + d + e + f;
}

// bf16 keeps fewer digits: 1 - 1e-3 is 1 there, and so is 1 + 1e-3 before it meets p.
torch::Tensor bf16_probability_bounds(torch::Tensor logits) {
  auto p = torch::sigmoid(logits.to(torch::kBFloat16));
  auto a = p.clamp(1e-4, 1 - 1e-3);
// CHECK: :[[@LINE-1]]:26: warning: Tensor::clamp upper bound 1 - 1e-3 = 0.999 is 1 in bf16 (the nearest bf16 value inside is 0.99609375): the clamped value reaches 1, where log(1 - p) and log1p(-p) are -inf [mpnanny-fp16-constant-range]
  auto b = p.clamp(1e-4, 1 - 1e-2);
  auto c = (1 + 1e-3) - p;
// CHECK: :[[@LINE-1]]:12: warning: 1 + 1e-3 = 1.001 is 1 in bf16, where the tensor meets it: the 0.001 is below 0.00391, half the spacing of bf16 values at 1, and the margin it was written for is gone [mpnanny-fp16-constant-range]
  const double upper = 1.0 - 1e-4;
  auto d = p * upper;
// CHECK: :[[@LINE-1]]:16: warning: 1.0 - 1e-4 = 0.9999 (through 'upper') is 1 in bf16, where the tensor meets it: the 0.0001 is below 0.00195, half the spacing of bf16 values at 1, and the margin it was written for is gone [mpnanny-fp16-constant-range]
  auto e = (1 - p) + 1e-3 + (1 + 1e-2) - p;
  return a + b + c + d + e;
}

// fp32 code keeps 1 - 1e-7 below 1 (0.99999988).
torch::Tensor fp32_probability_bounds(torch::Tensor logits) {
  auto p = torch::sigmoid(logits);
  return torch::log1p(-p.clamp(1e-7, 1 - 1e-7)) + (1 + 1e-3) - p;
}
