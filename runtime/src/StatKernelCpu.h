// The CPU stat kernel (StatKernelCpu.cpp): compute_tensor_stats for CPU tensors, as
// cuda/CudaStats.h is for CUDA ones.
#ifndef MPNANNY_RUNTIME_STATKERNELCPU_H
#define MPNANNY_RUNTIME_STATKERNELCPU_H

#include "mpnanny/TensorStats.h"

namespace mpnanny {

/// The statistics of a strided CPU tensor of float, double, half or bfloat16 (contiguous or
/// not), in one parallel pass; an empty result for any other dtype. The caller has turned
/// RecordFunction off and handles sparse, complex and device tensors; this may throw.
TensorStats compute_tensor_stats_cpu(const at::Tensor& tensor);

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_STATKERNELCPU_H
