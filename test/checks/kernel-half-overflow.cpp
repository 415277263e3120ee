// RUN: %mpnanny_check --checks='-*,mpnanny-kernel-half-overflow' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-kernel-half-overflow' %s -- %check_flags | %FileCheckAll %s

#include <cmath>
#include <torch/extension.h>
#include <cuda_fp16_mock.h>

// A softmax kernel that forgets the maximum, and squared distances kept in scalar_t.
template <typename scalar_t>
void attention_kernel(const scalar_t *scores, scalar_t *weights, const scalar_t *x,
                      const scalar_t *y, scalar_t *dist, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    weights[i] = static_cast<scalar_t>(std::exp(static_cast<float>(scores[i])));
// CHECK: :[[@LINE-1]]:40: warning: exp kept in fp16 is inf for x > 11.09 (exp(11.09) = 65504) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE+11]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-half-overflow.cpp:[[#@LINE+11]]
  for (int64_t i = 0; i < n; ++i) {
    scalar_t d = x[i] - y[i];
    dist[i] = d * d;
// CHECK: :[[@LINE-1]]:15: warning: square computed in fp16 is inf for |x| > 255.9 (255.9 * 255.9 = 65504) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE+6]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-half-overflow.cpp:[[#@LINE+6]]
  }
}

void attention(const at::Tensor &scores, at::Tensor &weights, const at::Tensor &x,
               const at::Tensor &y, at::Tensor &dist, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(scores.scalar_type(), "attention", [&] {
    attention_kernel<scalar_t>(scores.data_ptr<scalar_t>(), weights.data_ptr<scalar_t>(),
                               x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(),
                               dist.data_ptr<scalar_t>(), n);
  });
}

// RoI areas in the dispatch's lambda.
void roi_area(const at::Tensor &boxes, at::Tensor &areas, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(boxes.scalar_type(), "roi_area", [&] {
    const scalar_t *b = boxes.data_ptr<scalar_t>();
    scalar_t *a = areas.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      a[i] = (b[4 * i + 2] - b[4 * i]) * (b[4 * i + 3] - b[4 * i + 1]);
// CHECK: :[[@LINE-1]]:14: warning: product of two differences (an area, a squared distance) computed in fp16 is inf once it passes 65504 (sides of 256) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE-2]]:14: note: fp16 context: the values are at::Half
  });
}

// CUDA intrinsics: hexp without the maximum, a converted expf, a square with __hmul, and a
// layer norm whose variance stays in half.
void cuda_math(const __half *x, __half *out, const half2 *x2, half2 *out2, float logit, int n) {
  for (int i = 0; i < n; ++i) {
    out[i] = hexp(x[i]);
// CHECK: :[[@LINE-1]]:14: warning: hexp kept in fp16 is inf for x > 11.09 (exp(11.09) = 65504) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE-2]]:14: note: fp16 context: the values are __half
    out2[i] = h2exp(x2[i]);
// CHECK: :[[@LINE-1]]:15: warning: h2exp kept in fp16 is inf for x > 11.09 (exp(11.09) = 65504) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE-2]]:15: note: fp16 context: the values are __half2
  }
  out[0] = (__half)expf(logit);
// CHECK: :[[@LINE-1]]:20: warning: expf kept in fp16 is inf for x > 11.09 (exp(11.09) = 65504) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE-2]]:20: note: fp16 context: the values are __half
  __half sq = __hmul(x[1], x[1]);
// CHECK: :[[@LINE-1]]:15: warning: square computed in fp16 is inf for |x| > 255.9 (255.9 * 255.9 = 65504) [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE-2]]:15: note: fp16 context: the values are __half
  __half var = __float2half(0.f);
  for (int i = 0; i < n; ++i)
    var = __hfma(x[i], x[i], var);
  out[1] = hrsqrt(var);
// CHECK: :[[@LINE-1]]:12: warning: hrsqrt of a variance kept in fp16: a variance above 65504 is inf and one below 5.96e-8 is 0, so the scale is 0 or inf [mpnanny-kernel-half-overflow]
// CHECK: :[[#@LINE-2]]:12: note: fp16 context: the values are __half
  out[2] = sq;
}

// Safe idioms.
template <typename scalar_t>
void safe_kernel(const scalar_t *scores, scalar_t *weights, scalar_t max_score, const scalar_t *x,
                 scalar_t *out, int64_t n) {
  using accscalar_t = at::acc_type<scalar_t, true>;
  // exp of x - max is at most 1.
  for (int64_t i = 0; i < n; ++i)
    weights[i] = static_cast<scalar_t>(std::exp(static_cast<float>(scores[i] - max_score)));
  // Squares and the variance in float, the result converted once.
  accscalar_t var = 0;
  for (int64_t i = 0; i < n; ++i) {
    accscalar_t v = static_cast<accscalar_t>(x[i]);
    var += v * v;
  }
  out[0] = static_cast<scalar_t>(1.0f / std::sqrt(var + 1e-5f));
  // exp kept in float.
  float e = std::exp(static_cast<float>(scores[0]));
  // A product of two different values.
  out[1] = x[0] * x[1] + static_cast<scalar_t>(e);
}

void safe(const at::Tensor &s, at::Tensor &w, const at::Tensor &x, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(s.scalar_type(), "safe", [&] {
    safe_kernel<scalar_t>(s.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), scalar_t(0),
                          x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
}

void cuda_safe(const __half *x, __half *out, __half max_x, int n) {
  for (int i = 0; i < n; ++i)
    out[i] = hexp(__hsub(x[i], max_x));
  float v = __half2float(x[0]);
  float sq = v * v;
  out[0] = __float2half(rsqrtf(sq + 1e-5f));
}

// bf16 has fp32's exponent range: exp and squares overflow it only where they overflow fp32.
template <typename scalar_t> void bf16_kernel(const scalar_t *x, scalar_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<scalar_t>(std::exp(static_cast<float>(x[i]))) + x[i] * x[i];
}

void bf16_only(const at::Tensor &x, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND(at::ScalarType::BFloat16, x.scalar_type(), "bf16_only", [&] {
    bf16_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
}

// Float-only dispatch.
void float_only(const at::Tensor &x, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "float_only", [&] {
    const scalar_t *in = x.data_ptr<scalar_t>();
    scalar_t *o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<scalar_t>(std::exp(in[i])) + in[i] * in[i];
  });
}
