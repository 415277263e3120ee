// RUN: %mpnanny_check --checks='-*,mpnanny-risky-op' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-risky-op' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// A model converted to half: every op runs in fp16.
struct HalfNetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto e = torch::pow(x, 2);
// CHECK: :[[@LINE-1]]:14: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
    auto m = x.square();
// CHECK: :[[@LINE-1]]:16: warning: Tensor::square in fp16 {{.*}} [mpnanny-risky-op]
    auto sq = x.pow(2);
// CHECK: :[[@LINE-1]]:17: warning: Tensor::pow in fp16 {{.*}} [mpnanny-risky-op]
    // Safe: the input is upcast first.
    auto a = torch::pow(x.to(torch::kFloat), 2);
    auto up = x.to(torch::kFloat32);
    auto c = up.square();
    // exp is mpnanny-unsafe-math's (its rule says so): one finding per call.
    auto unknown = x.exp();
    // Owned by other checks (one finding per call): softmax by mpnanny-softmax-dtype, the
    // square of a hand-written statistic by mpnanny-norm-in-half, sum by mpnanny-unscaled-sum.
    auto p = torch::softmax(x, -1);
    auto var = x.pow(2).mean(-1, true);
    auto total = x.sum();
    // A square summed over a whole sample in fp16 is the sum's finding too: the total passes
    // 65504 long before one square does. Summed over one dimension, or in fp32, the square
    // is reported on its own.
    auto kl = torch::sum(torch::pow(x, 2) + x - 1.0, {1, 2, 3}) + (x.square() * 0.5).sum();
    auto row = torch::sum(torch::pow(x, 2), {-1});
// CHECK: :[[@LINE-1]]:27: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
    auto wide = torch::sum(x.pow(2) - x, {1, 2, 3}, false, torch::kFloat);
// CHECK: :[[@LINE-1]]:30: warning: Tensor::pow in fp16 {{.*}} [mpnanny-risky-op]
    return e + m + sq + a + c + unknown + p + var + total + kl + row + wide;
  }
};
TORCH_MODULE(HalfNet);

struct SoftmaxModuleImpl : torch::nn::Module {
  torch::nn::Softmax softmax{torch::nn::SoftmaxOptions(1)};
  torch::nn::LayerNorm norm{torch::nn::LayerNormOptions({8})};
  torch::Tensor forward(torch::Tensor x) {
    // LayerNorm's kernels compute mean and 1/sqrt(var + eps) in float even for fp16 input.
    auto normed = norm(x) + torch::layer_norm(x, {8});
    return softmax(normed).pow(2);
// CHECK: :[[@LINE-1]]:28: warning: Tensor::pow in fp16 {{.*}} [mpnanny-risky-op]
  }
};
TORCH_MODULE(SoftmaxModule);

// Rotary inverse frequencies built in fp32 inside a half model: options that name kFloat32,
// held in a local nothing changes, make the tensor fp32 whatever the model runs in.
struct RotaryImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto opts = x.options().dtype(torch::kFloat32);
    auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(32, opts) / 32);
    auto options = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA);
    auto direct = torch::pow(10000.0, torch::arange(32, options));
    // Half options, and options changed after their initializer: fp16.
    auto half_opts = x.options().dtype(torch::kHalf);
    auto in_half = torch::pow(10000.0, torch::arange(32, half_opts));
// CHECK: :[[@LINE-1]]:{{[0-9]+}}: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
    auto changed = x.options().dtype(torch::kFloat32);
    changed = changed.dtype(torch::kHalf);
    auto reassigned = torch::pow(10000.0, torch::arange(32, changed));
// CHECK: :[[@LINE-1]]:{{[0-9]+}}: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
    torch::Dtype freqs_dtype = torch::kFloat64;
    return x * inv_freq + direct + in_half + reassigned + passed_frequencies(32, torch::kHalf) +
           defaulted_frequencies(32) + local_passed_frequencies(32, freqs_dtype);
  }
  // A dtype parameter holds what every call in the unit passes (the default where a call leaves
  // it out), or its default when no call is in sight.
  torch::Tensor uncalled_frequencies(int64_t dim, torch::Dtype dtype = torch::kFloat32) {
    return torch::pow(10000.0, torch::arange(0, dim, 2, torch::dtype(dtype)) / dim);
  }
  torch::Tensor defaulted_frequencies(int64_t dim, torch::Dtype dtype = torch::kFloat64) {
    return torch::pow(10000.0, torch::arange(0, dim, 2, torch::dtype(dtype)) / dim);
  }
  torch::Tensor local_passed_frequencies(int64_t dim, torch::Dtype dtype) {
    return torch::pow(10000.0, torch::arange(0, dim, 2, torch::dtype(dtype)) / dim);
  }
  torch::Tensor uncalled_half_frequencies(int64_t dim, torch::Dtype dtype = torch::kHalf) {
    return torch::pow(10000.0, torch::arange(0, dim, 2, torch::dtype(dtype)) / dim);
// CHECK: :[[@LINE-1]]:12: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
// CHECK: :[[@LINE-2]]:32: warning: torch::arange in fp16 {{.*}} [mpnanny-risky-op]
  }
  torch::Tensor passed_frequencies(int64_t dim, torch::Dtype dtype = torch::kFloat32) {
    return torch::pow(10000.0, torch::arange(0, dim, 2, torch::dtype(dtype)) / dim);
// CHECK: :[[@LINE-1]]:12: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
// CHECK: :[[@LINE-2]]:32: warning: torch::arange in fp16 {{.*}} [mpnanny-risky-op]
  }
};
TORCH_MODULE(Rotary);

void train_half() {
  HalfNet net;
  net->to(torch::kHalf);
  Rotary rotary;
  rotary->to(torch::kHalf);
  SoftmaxModule sm;
  sm->to(torch::kCUDA, torch::kHalf);
}

// Under autocast pow runs in fp32; binary_cross_entropy there is mpnanny-loss-in-half's finding.
torch::Tensor autocast_step(torch::Tensor logits, torch::Tensor target) {
  at::autocast::set_enabled(true);
  auto e = torch::pow(logits, 2);
  auto loss = torch::binary_cross_entropy(torch::sigmoid(logits), target);
  at::autocast::set_enabled(false);
  return loss + e;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_only(torch::Tensor x) {
  return torch::softmax(x, -1) + torch::log(x) + x.exp() + x.pow(2);
}

// pow of a value the range analysis bounds cannot overflow: (1 - sigmoid)^2 and tanh^2
// stay within [0, 1], a clamp to [-10, 10] squared within 100. Unbounded or past 255.9
// it still can.
torch::Tensor bounded_squares(torch::Tensor logits) {
  auto h = logits.to(torch::kHalf);
  auto p = torch::sigmoid(h);
  auto focal = (1 - p).pow(2) + torch::tanh(h).pow(2) + h.clamp(-10, 10).pow(2);
  auto wide = h.clamp(-300, 300).pow(2);
// CHECK: :[[@LINE-1]]:34: warning: Tensor::pow in fp16 {{.*}} [mpnanny-risky-op]
  auto relu_sq = torch::relu(h).pow(2);
// CHECK: :[[@LINE-1]]:33: warning: Tensor::pow in fp16 {{.*}} [mpnanny-risky-op]
  auto inv = torch::sigmoid(h).pow(-1);
// CHECK: :[[@LINE-1]]:32: warning: Tensor::pow in fp16 {{.*}} [mpnanny-risky-op]
  return focal + wide + relu_sq + inv;
}

// An overflow that only drives tanh to its limit: GELU's tanh form gives x or 0, the exact
// limits of GELU, once the cube passes 65504. A factor that may be 0 on the way (inf * 0 is
// NaN), or a cube that is the result, is still reported.
struct HalfGeluImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    const double c = 0.7978845608028654;
    auto gelu = 0.5 * x * (1.0 + torch::tanh(c * (x + 0.044715 * torch::pow(x, 3))));
    auto gate = (x - torch::pow(x, 3) / 6.0).sigmoid();
    auto damped = torch::tanh(x * torch::pow(x, 3));
// CHECK: :[[@LINE-1]]:35: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
    auto cube = torch::pow(x, 3);
// CHECK: :[[@LINE-1]]:17: warning: torch::pow in fp16 {{.*}} [mpnanny-risky-op]
    // sin and cos lie in [-1, 1]: their square cannot approach 65504.
    auto wave = torch::sin(x).pow(2) + x.cos().pow(2);
    return gelu + gate + damped + cube + wave;
  }
};
TORCH_MODULE(HalfGelu);
void convert_gelu() {
  HalfGelu gelu;
  gelu->to(torch::kHalf);
}

// arange makes int64 (or fp32) unless the call asks for a dtype: in the dtype of a half
// tensor, positions past 2048 (fp16) or 256 (bf16) collide.
torch::Tensor alibi_bias(torch::Tensor query, torch::Tensor lengths, torch::TensorOptions options,
                         int64_t kv_len) {
  auto q = query.to(torch::kHalf);
  auto distance = torch::arange(0, kv_len, q.options());
// CHECK: :[[@LINE-1]]:19: warning: torch::arange in fp16 holds integers exactly only up to 2048{{.*}} [mpnanny-risky-op]
  auto bf16_ids = torch::arange(kv_len, q.options().dtype(torch::kBFloat16));
// CHECK: :[[@LINE-1]]:19: warning: torch::arange in bf16 holds integers exactly only up to 256{{.*}} [mpnanny-risky-op]
  auto q_options = q.options();
  auto steps = torch::arange(0, kv_len, 2, q_options);
// CHECK: :[[@LINE-1]]:16: warning: torch::arange in fp16 {{.*}} [mpnanny-risky-op]
  // Safe: the default int64, small constant bounds, an fp32 or integer dtype, options that
  // say nothing readable, the options of an integer tensor.
  auto ids = torch::arange(kv_len);
  auto heads = torch::arange(0, 64, q.options());
  auto floats = torch::arange(kv_len, q.options().dtype(torch::kFloat));
  auto longs = torch::arange(kv_len, q.options().dtype(torch::kLong));
  auto given = torch::arange(kv_len, options);
  int64_t *first = lengths.data_ptr<int64_t>();
  auto offsets = torch::arange(kv_len, lengths.options());
  return distance + bf16_ids + steps + ids + heads + floats + longs + given + offsets;
}
