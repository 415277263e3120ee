// RUN: %mpnanny_check --checks='-*,mpnanny-kernel-constant-range' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-kernel-constant-range' %s -- %check_flags | %FileCheckAll %s

#include <cfloat>
#include <cmath>
#include <limits>
#include <torch/extension.h>
#include <cuda_fp16_mock.h>

// A masked max and a log clamp in a kernel template, dispatched for Half.
template <typename scalar_t>
void masked_max_kernel(const scalar_t *x, const bool *mask, scalar_t *out, int64_t n) {
  scalar_t best = static_cast<scalar_t>(-1e8);
// CHECK: :[[@LINE-1]]:41: warning: -1e8 becomes -inf in fp16 (largest finite value 65504) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE+15]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-constant-range.cpp:[[#@LINE+15]]
  for (int64_t i = 0; i < n; ++i) {
    scalar_t v = mask[i] ? x[i] : scalar_t(-1e30);
// CHECK: :[[@LINE-1]]:44: warning: -1e30 becomes -inf in fp16 (largest finite value 65504) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE+11]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-constant-range.cpp:[[#@LINE+11]]
    best = v > best ? v : best;
  }
  scalar_t floor_value = (scalar_t)FLT_MIN;
// CHECK: :[[@LINE-1]]:36: warning: 1.18e-38 becomes 0 in fp16 (smallest subnormal 5.96e-8) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE+6]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-constant-range.cpp:[[#@LINE+6]]
  out[0] = best;
  out[1] = std::log(std::max(static_cast<float>(out[0]), static_cast<float>(floor_value)));
}

void masked_max(const at::Tensor &x, const at::Tensor &mask, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "masked_max", [&] {
    masked_max_kernel<scalar_t>(x.data_ptr<scalar_t>(), mask.data_ptr<bool>(),
                                out.data_ptr<scalar_t>(), n);
  });
}

// In the dispatch's lambda: -FLT_MAX as an initial maximum, an eps added before the division.
void normalize(const at::Tensor &x, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "normalize", [&] {
    const scalar_t *in = x.data_ptr<scalar_t>();
    scalar_t max_value = -FLT_MAX;
// CHECK: :[[@LINE-1]]:26: warning: -3.4e38 becomes -inf in fp16 (largest finite value 65504) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE-4]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-constant-range.cpp:[[#@LINE-4]]
    scalar_t denom = in[0] + 1e-8;
// CHECK: :[[@LINE-1]]:30: warning: eps 1e-8 is lost when the sum is stored in fp16: below half its smallest subnormal 5.96e-8, x + 1e-8 rounds to x and 0 stays 0 [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE-7]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-constant-range.cpp:[[#@LINE-7]]
    out.data_ptr<scalar_t>()[0] = max_value / denom;
  });
}

// CUDA conversions and a big sentinel.
void cuda_constants(__half *out, __nv_bfloat16 *out_bf16) {
  out[0] = __float2half(-1e30f);
// CHECK: :[[@LINE-1]]:25: warning: -1e30 becomes -inf in fp16 (largest finite value 65504) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE-2]]:12: note: fp16 context: the values are __half
  out[1] = __float2half(1e10f);
// CHECK: :[[@LINE-1]]:25: warning: 1e10 becomes inf in fp16 (largest finite value 65504) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE-2]]:12: note: fp16 context: the values are __half
  out[2] = __float2half(1e-9f);
// CHECK: :[[@LINE-1]]:25: warning: 1e-9 becomes 0 in fp16 (smallest subnormal 5.96e-8) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE-2]]:12: note: fp16 context: the values are __half
  // bf16 has fp32's range: 1e30 fits, 1e-9 is a normal value.
  out_bf16[0] = __float2bfloat16(-1e30f);
  out_bf16[1] = __float2bfloat16(1e-9f);
  // bf16 does not hold fp32's largest value.
  out_bf16[2] = __float2bfloat16(3.4e38f);
// CHECK: :[[@LINE-1]]:34: warning: 3.4e38 becomes inf in bf16 (largest finite value 3.39e38) [mpnanny-kernel-constant-range]
// CHECK: :[[#@LINE-2]]:17: note: bf16 context: the values are __nv_bfloat16
}

// Safe idioms.
template <typename scalar_t>
void safe_kernel(const scalar_t *x, scalar_t *out, int64_t n) {
  scalar_t lowest = std::numeric_limits<scalar_t>::lowest();
  scalar_t mask_value = static_cast<scalar_t>(-65504.0f);
  scalar_t soft_mask = scalar_t(-1e4);
  scalar_t eps = static_cast<scalar_t>(1e-5);
  // Constants in the float accumulator.
  at::acc_type<scalar_t, true> running_max = -1e30;
  at::acc_type<scalar_t, true> tiny = 1e-12;
  // A clamp to the format's range before the conversion.
  scalar_t clamped = static_cast<scalar_t>(std::max(-FLT_MAX, -65504.0f));
  float inf = INFINITY;
  scalar_t minus_inf = -INFINITY;
  out[0] = lowest + mask_value + soft_mask + eps + clamped + minus_inf;
  out[1] = static_cast<scalar_t>(running_max + tiny + inf);
}

void safe(const at::Tensor &x, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "safe", [&] {
    safe_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
}

// Float-only dispatch: -1e30 is a float.
void float_only(const at::Tensor &x, at::Tensor &out) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "float_only", [&] {
    scalar_t sentinel = static_cast<scalar_t>(-1e30);
    out.data_ptr<scalar_t>()[0] = sentinel;
  });
}
