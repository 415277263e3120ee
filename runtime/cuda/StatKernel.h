// The CUDA stat kernel over raw device memory: no LibTorch here, so that it compiles (and its
// compile test runs) with the CUDA toolkit alone. The LibTorch-facing side is CudaStats.cpp.
#ifndef MPNANNY_CUDA_STATKERNEL_H
#define MPNANNY_CUDA_STATKERNEL_H

#include <cuda_runtime_api.h>

#include <cstdint>

#include "mpnanny/ElementClass.h"

namespace mpnanny::cuda {

enum class ElementType : int { Half = 0, BFloat16 = 1, Float = 2, Double = 3 };

/// The device-wide result; mirrors mpnanny::TensorStats without its numel. max_abs,
/// min_abs_nonzero, sum and sum_squares cover finite elements only, as on the CPU.
struct DeviceStats {
  unsigned long long nan_count;
  unsigned long long inf_count;
  unsigned long long zero_count;
  unsigned long long fp16_overflow;
  unsigned long long fp16_subnormal;
  unsigned long long fp16_flush;
  unsigned long long bf16_overflow;
  unsigned long long bf16_subnormal;
  unsigned long long bf16_flush;
  unsigned long long histogram[kHistogramBuckets];
  double max_abs;
  double min_abs_nonzero;  ///< +inf when there is no finite non-zero element
  double sum;
  double sum_squares;
};

/// Per-block partial results, the final result on the device and its pinned host copy, kept
/// between calls so that a statistics pass allocates nothing. One per device and host thread:
/// a pass ends with a stream synchronization, so reuse by the same thread is safe.
class StatWorkspace {
 public:
  StatWorkspace() = default;
  ~StatWorkspace();
  StatWorkspace(const StatWorkspace&) = delete;
  StatWorkspace& operator=(const StatWorkspace&) = delete;

  /// Allocates for `device` on first use (the current device must be `device`).
  cudaError_t prepare(int device);
  int grid_size() const { return grid_size_; }
  DeviceStats* partials() const { return partials_; }
  DeviceStats* device_result() const { return device_result_; }
  DeviceStats* host_result() const { return host_result_; }

 private:
  int device_ = -1;
  int grid_size_ = 0;
  DeviceStats* partials_ = nullptr;
  DeviceStats* device_result_ = nullptr;
  DeviceStats* host_result_ = nullptr;  // pinned
};

/// Enqueues the pass over `numel` contiguous elements at `data` on `stream`: one read of the
/// memory, a block-level reduction, a device-wide reduction into the workspace's device result
/// and its copy to host_result(). Returns without waiting.
cudaError_t launch_tensor_stats(const void* data, int64_t numel, ElementType type, cudaStream_t stream,
                                StatWorkspace& workspace);

/// launch_tensor_stats, then waits for the stream and copies the host result to `out`.
cudaError_t compute_tensor_stats(const void* data, int64_t numel, ElementType type, cudaStream_t stream,
                                 StatWorkspace& workspace, DeviceStats& out);

}  // namespace mpnanny::cuda

#endif  // MPNANNY_CUDA_STATKERNEL_H
