// RUN: %mpnanny_check --checks='-*,mpnanny-kernel-half-atomic' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-kernel-half-atomic' %s -- %check_flags | %FileCheckAll %s

#include <ATen/cuda/Atomic.cuh>
#include <ATen/native/cuda/KernelUtils.cuh>
#include <torch/extension.h>
#include <cuda_fp16_mock.h>

// An embedding backward: every token adds its gradient into the row of its index.
template <typename scalar_t>
void embedding_backward_kernel(const int64_t *indices, const scalar_t *grad, scalar_t *grad_weight,
                               int64_t tokens, int64_t dim) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t d = 0; d < dim; ++d)
      gpuAtomicAdd(&grad_weight[indices[t] * dim + d], grad[t * dim + d]);
// CHECK: :[[@LINE-1]]:7: warning: gpuAtomicAdd into an fp16 buffer: the additions of all threads form a running sum in fp16, which stops growing at 2048x its addend [mpnanny-kernel-half-atomic]
// CHECK: :[[#@LINE+5]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND_HALF at kernel-half-atomic.cpp:[[#@LINE+5]]
}

void embedding_backward(const at::Tensor &indices, const at::Tensor &grad, at::Tensor &grad_weight,
                        int64_t tokens, int64_t dim) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(grad.scalar_type(), "embedding_backward", [&] {
    embedding_backward_kernel<scalar_t>(indices.data_ptr<int64_t>(), grad.data_ptr<scalar_t>(),
                                        grad_weight.data_ptr<scalar_t>(), tokens, dim);
  });
}

// Counts built by scatter-adding ones in the source dtype, written in the dispatch.
void scatter_count(const at::Tensor &index, at::Tensor &counts, int64_t n, int64_t numel) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
                                  counts.scalar_type(), "scatter_count", [&] {
    scalar_t *c = counts.data_ptr<scalar_t>();
    const int64_t *idx = index.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      fastAtomicAdd(c, idx[i], numel, scalar_t(1), true);
// CHECK: :[[@LINE-1]]:7: warning: fastAtomicAdd into an fp16 buffer: the additions of all threads form a running sum in fp16, which stops growing at 2048x its addend [mpnanny-kernel-half-atomic]
// CHECK: :[[#@LINE-7]]:3: note: fp16 context: scalar_t = at::Half, from AT_DISPATCH_FLOATING_TYPES_AND2 at kernel-half-atomic.cpp:[[#@LINE-7]]
  });
}

// CUDA's own overloads.
void hash_grid_backward(__half *grid, __nv_bfloat16 *grid_bf16, half2 *grid2, const int *cell,
                        const float *g, int n) {
  for (int i = 0; i < n; ++i) {
    atomicAdd(&grid[cell[i]], __float2half(g[i]));
// CHECK: :[[@LINE-1]]:5: warning: atomicAdd into an fp16 buffer: the additions of all threads form a running sum in fp16, which stops growing at 2048x its addend [mpnanny-kernel-half-atomic]
// CHECK: :[[#@LINE-2]]:5: note: fp16 context: the values are __half
    atomicAdd(grid_bf16 + cell[i], __float2bfloat16(g[i]));
// CHECK: :[[@LINE-1]]:5: warning: atomicAdd into a bf16 buffer: the additions of all threads form a running sum in bf16, which stops growing at 256x its addend [mpnanny-kernel-half-atomic]
// CHECK: :[[#@LINE-2]]:5: note: bf16 context: the values are __nv_bfloat16
    atomicAdd(&grid2[cell[i]], __float2half2_rn(g[i]));
// CHECK: :[[@LINE-1]]:5: warning: atomicAdd into an fp16 buffer: the additions of all threads form a running sum in fp16, which stops growing at 2048x its addend [mpnanny-kernel-half-atomic]
// CHECK: :[[#@LINE-2]]:5: note: fp16 context: the values are __half2
  }
}

// Safe: float and double destinations, and a float buffer converted after the kernel.
template <typename scalar_t>
void roi_backward_kernel(const scalar_t *grad, at::acc_type<scalar_t, true> *grad_input_acc,
                         const int *bins, int n) {
  for (int i = 0; i < n; ++i)
    gpuAtomicAdd(&grad_input_acc[bins[i]], static_cast<at::acc_type<scalar_t, true>>(grad[i]));
}

void roi_backward(const at::Tensor &grad, at::Tensor &grad_input_acc, const at::Tensor &bins,
                  int n, float *f, double *d) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(grad.scalar_type(), "roi_backward", [&] {
    roi_backward_kernel<scalar_t>(grad.data_ptr<scalar_t>(),
                                  grad_input_acc.data_ptr<at::acc_type<scalar_t, true>>(),
                                  bins.data_ptr<int>(), n);
  });
  atomicAdd(f, 1.0f);
  atomicAdd(d, 1.0);
}

// Float-only dispatch.
void float_scatter(const at::Tensor &src, at::Tensor &dst, const int64_t *idx, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES(src.scalar_type(), "float_scatter", [&] {
    scalar_t *out = dst.data_ptr<scalar_t>();
    const scalar_t *in = src.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      gpuAtomicAdd(out + idx[i], in[i]);
  });
}
