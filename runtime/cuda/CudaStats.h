// The CUDA path of mpnanny::compute_tensor_stats (built only against a LibTorch with CUDA).
#ifndef MPNANNY_CUDA_CUDASTATS_H
#define MPNANNY_CUDA_CUDASTATS_H

#include "mpnanny/TensorStats.h"

namespace mpnanny {

/// Statistics of a CUDA tensor computed on its device, on the current stream of that device.
/// False (and `out` untouched) when the tensor is not a CUDA tensor of an observable dtype or
/// the device reports an error: the caller then falls back to a host copy.
bool compute_tensor_stats_cuda(const at::Tensor& tensor, TensorStats& out) noexcept;

}  // namespace mpnanny

#endif  // MPNANNY_CUDA_CUDASTATS_H
