// RUN: %mpnanny_check --checks='-*,mpnanny-kernel-half-accumulator' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-kernel-half-accumulator' %s -- %check_flags | %FileCheckAll %s
// The fix-it, through both doors: the accumulator's type becomes float's.
// RUN: rm -rf %t && mkdir -p %t && cp %s %t/check.cpp && cp %s %t/tidy.cpp
// RUN: not %mpnanny_check --fix --checks='-*,mpnanny-kernel-half-accumulator' %t/check.cpp -- %check_flags > /dev/null
// RUN: FileCheck %s --check-prefix=CHECK-FIXES < %t/check.cpp
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-kernel-half-accumulator' --fix %t/tidy.cpp -- %check_flags > /dev/null
// RUN: FileCheck %s --check-prefix=CHECK-FIXES < %t/tidy.cpp

#include <torch/extension.h>
#include <cuda_fp16_mock.h>

// A CPU kernel written inside the dispatch: scalar_t is at::Half in one of its cases.
void row_sum_inline(const at::Tensor &x, at::Tensor &out, int64_t rows, int64_t cols) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "row_sum", [&] {
    const scalar_t *in = x.data_ptr<scalar_t>();
    scalar_t *o = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) {
      scalar_t sum = 0;
// CHECK: :[[@LINE-1]]:16: warning: 'sum' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE-6]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-half-accumulator.cpp:[[#@LINE-6]]
      for (int64_t c = 0; c < cols; ++c)
        sum += in[r * cols + c];
      o[r] = sum;
    }
  });
}

// A kernel template, instantiated by the dispatch for Half and BFloat16.
template <typename scalar_t>
void channel_sum_kernel(const scalar_t *in, scalar_t *out, int64_t channels, int64_t size) {
  for (int64_t i = 0; i < size; ++i) {
    scalar_t total = 0;
// CHECK: :[[@LINE-1]]:14: warning: 'total' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE+8]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND2 at kernel-half-accumulator.cpp:[[#@LINE+8]]
    for (int64_t c = 0; c < channels; ++c)
      total = total + in[c * size + i];
    out[i] = total;
  }
}

void channel_sum(const at::Tensor &x, at::Tensor &out, int64_t channels, int64_t size) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(),
                                  "channel_sum", [&] {
    channel_sum_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), channels, size);
  });
}

// An explicit instantiation for at::Half.
template <typename T> T dot(const T *a, const T *b, int n) {
  T acc = 0;
// CHECK: :[[@LINE-1]]:5: warning: 'acc' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE+5]]:19: note: fp16 context: T = at::Half, explicit instantiation at kernel-half-accumulator.cpp:[[#@LINE+5]]
  for (int i = 0; i < n; ++i)
    acc += a[i] * b[i];
  return acc;
}
template at::Half dot<at::Half>(const at::Half *, const at::Half *, int);
template float dot<float>(const float *, const float *, int);

// A project's own dispatch macro that binds scalar_t to at::Half in one case.
#define MY_DISPATCH_FLOAT_AND_HALF(TYPE, ...)                                                       \
  [&] {                                                                                            \
    switch (TYPE) {                                                                                \
    case at::ScalarType::Float: {                                                                  \
      using scalar_t = float;                                                                      \
      return __VA_ARGS__();                                                                        \
    }                                                                                              \
    case at::ScalarType::Half: {                                                                   \
      using scalar_t = at::Half;                                                                   \
      return __VA_ARGS__();                                                                        \
    }                                                                                              \
    default:                                                                                       \
      break;                                                                                       \
    }                                                                                              \
  }()

template <typename scalar_t> scalar_t segment_sum(const scalar_t *x, int64_t begin, int64_t end) {
  scalar_t s = 0;
// CHECK: :[[@LINE-1]]:12: warning: 's' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE+7]]:3: note: fp16 context: scalar_t = at::Half, from MY_DISPATCH_FLOAT_AND_HALF at kernel-half-accumulator.cpp:[[#@LINE+7]]
  for (int64_t i = begin; i < end; ++i)
    s += x[i];
  return s;
}

void segments(const at::Tensor &x, int64_t n) {
  MY_DISPATCH_FLOAT_AND_HALF(x.scalar_type(), [&] { segment_sum<scalar_t>(x.data_ptr<scalar_t>(), 0, n); });
}

// Called with at::Half directly.
template <typename T> T grid_sum(const T *grid, int64_t samples) {
  T acc = T(0);
// CHECK: :[[@LINE-1]]:5: warning: 'acc' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE+5]]:51: note: fp16 context: T = at::Half, from the call at kernel-half-accumulator.cpp:[[#@LINE+5]]
  for (int64_t s = 0; s < samples; ++s)
    acc += grid[s];
  return acc;
}
void grid(const at::Tensor &x, int64_t samples) { grid_sum<at::Half>(x.data_ptr<at::Half>(), samples); }

// A dtype fixed by a check: the data is at::Half.
void half_only(const at::Tensor &x, int64_t n) {
  TORCH_CHECK(x.scalar_type() == at::kHalf, "half only");
  const at::Half *p = x.data_ptr<at::Half>();
  at::Half total = 0;
// CHECK: :[[@LINE-1]]:12: warning: 'total' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE-4]]:3: note: fp16 context: at::Half, the dtype the check at kernel-half-accumulator.cpp:[[#@LINE-4]] requires
  for (int64_t i = 0; i < n; ++i)
    total += p[i];
}

// CUDA types: a half2 dot product with __hfma2, a __half sum.
half2 dot_half2(const half2 *a, const half2 *b, int k) {
  half2 acc = __float2half2_rn(0.f);
// CHECK: :[[@LINE-1]]:9: warning: 'acc' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE+2]]:5: note: fp16 context: the values are __half2
  for (int i = 0; i < k; ++i)
    acc = __hfma2(a[i], b[i], acc);
  return acc;
}

float mean_half(const __half *x, int n) {
  __half s = __float2half(0.f);
// CHECK: :[[@LINE-1]]:10: warning: 's' accumulates in fp16 across a loop: the running sum stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
// CHECK: :[[#@LINE+2]]:5: note: fp16 context: the values are __half
  for (int i = 0; i < n; ++i)
    s += x[i];
  return __half2float(s) / n;
}

// cuBLAS with fp16 accumulation.
void gemms(cublasHandle_t handle, const __half *A, const __half *B, __half *C, int m, int n,
           int k, const __half *alpha, const __half *beta, const float *alpha32,
           const float *beta32) {
  cublasHgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, A, m, B, k, beta, C, m);
// CHECK: :[[@LINE-1]]:3: warning: cublasHgemm accumulates its dot products in fp16: a sum over K stops growing at 2048x its addend [mpnanny-kernel-half-accumulator]
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, A, CUDA_R_16F, m, B, CUDA_R_16F,
               k, beta, C, CUDA_R_16F, m, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);
// CHECK: :[[@LINE-1]]:43: warning: cublasGemmEx with compute type CUBLAS_COMPUTE_16F accumulates its dot products in fp16 [mpnanny-kernel-half-accumulator]
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha, A, CUDA_R_16F, m, B, CUDA_R_16F,
               k, beta, C, CUDA_R_16F, m, CUDA_R_16F, CUBLAS_GEMM_DEFAULT);
// CHECK: :[[@LINE-1]]:43: warning: cublasGemmEx with compute type CUDA_R_16F accumulates its dot products in fp16 [mpnanny-kernel-half-accumulator]
  // Safe: fp16 inputs and outputs, fp32 accumulation.
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, alpha32, A, CUDA_R_16F, m, B, CUDA_R_16F,
               k, beta32, C, CUDA_R_16F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// Safe idioms: none of these is reported.
template <typename scalar_t>
void safe_kernel(const scalar_t *in, scalar_t *out, const scalar_t *w, int64_t n) {
  // acc_type and opmath_type are float for at::Half.
  at::acc_type<scalar_t, true> sum = 0;
  using accscalar_t = at::acc_type<scalar_t, true>;
  accscalar_t sq = 0;
  at::opmath_type<scalar_t> m = 0;
  float f = 0;
  for (int64_t i = 0; i < n; ++i) {
    sum += in[i];
    sq += static_cast<accscalar_t>(in[i]) * static_cast<accscalar_t>(in[i]);
    m = m + in[i];
    f += in[i];
  }
  // A small constant trip count: bilinear weights (4 terms), a 2x2 window.
  scalar_t interp = 0;
  for (int k = 0; k < 4; ++k)
    interp += w[k] * in[k];
  scalar_t window = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx)
      window += in[dy * 2 + dx];
  // A sum of a few terms, no loop.
  scalar_t few = in[0] + in[1];
  few += in[2];
  // A fresh value each iteration: assigned, not accumulated.
  for (int64_t i = 0; i < n; ++i) {
    scalar_t v = in[i];
    v += w[0];
    out[i] = v;
  }
  out[0] = static_cast<scalar_t>(sum + sq + m + f) + interp + window + few;
}

void safe(const at::Tensor &x, at::Tensor &out, const at::Tensor &w, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "safe", [&] {
    safe_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                          w.data_ptr<scalar_t>(), n);
  });
}

// Float-only dispatch: no half instantiation, nothing to report.
void float_only(const at::Tensor &x, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "float_only", [&] {
    const scalar_t *in = x.data_ptr<scalar_t>();
    scalar_t sum = 0;
    for (int64_t i = 0; i < n; ++i)
      sum += in[i];
    out.data_ptr<scalar_t>()[0] = sum;
  });
}

// Model code in fp32: not a kernel.
float host_total(const std::vector<float> &losses) {
  float total = 0;
  for (float l : losses)
    total += l;
  return total;
}

// The fixes, in the order of the file: scalar_t and T become their accumulate type, a concrete
// half type float; an update by an intrinsic (__hfma2) keeps its type.
// CHECK-FIXES: {{^}}      at::acc_type<scalar_t, true> sum = 0;
// CHECK-FIXES: {{^}}    at::acc_type<scalar_t, true> total = 0;
// CHECK-FIXES: {{^}}  at::acc_type<T, true> acc = 0;
// CHECK-FIXES: {{^}}  at::acc_type<scalar_t, true> s = 0;
// CHECK-FIXES: {{^}}  at::acc_type<T, true> acc = T(0);
// CHECK-FIXES: {{^}}  float total = 0;
// CHECK-FIXES: {{^}}  half2 acc = __float2half2_rn(0.f);
// CHECK-FIXES: {{^}}  float s = __float2half(0.f);
