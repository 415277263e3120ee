// An embedding-bag backward in a CUDA extension's CPU twin: gradients scatter-added atomically.
#include <ATen/cuda/Atomic.cuh>
#include <torch/extension.h>

template <typename scalar_t>
void embedding_bag_backward_kernel(const int64_t *indices, const scalar_t *grad,
                                   scalar_t *grad_weight, at::acc_type<scalar_t, true> *grad_acc,
                                   int64_t n, int64_t dim) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) {
      gpuAtomicAdd(grad_weight + indices[i] * dim + d, grad[i * dim + d]); // expect: mpnanny-kernel-half-atomic
      gpuAtomicAdd(grad_acc + indices[i] * dim + d, static_cast<at::acc_type<scalar_t, true>>(grad[i * dim + d])); // ok: mpnanny-kernel-half-atomic
    }
}

void embedding_bag_backward(const at::Tensor &indices, const at::Tensor &grad,
                            at::Tensor &grad_weight, at::Tensor &grad_acc, int64_t n,
                            int64_t dim) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(grad.scalar_type(), "embedding_bag_backward", [&] {
    embedding_bag_backward_kernel<scalar_t>(
        indices.data_ptr<int64_t>(), grad.data_ptr<scalar_t>(), grad_weight.data_ptr<scalar_t>(),
        grad_acc.data_ptr<at::acc_type<scalar_t, true>>(), n, dim);
  });
}

// Histogram counts: float-only, so the count is exact to 2^24.
void histogram(const at::Tensor &bins, at::Tensor &counts, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES(counts.scalar_type(), "histogram", [&] {
    scalar_t *c = counts.data_ptr<scalar_t>();
    const int64_t *b = bins.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      gpuAtomicAdd(c + b[i], scalar_t(1)); // ok: mpnanny-kernel-half-atomic
  });
}
