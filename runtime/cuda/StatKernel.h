// The CUDA stat kernel over raw device memory: no LibTorch here, so that it compiles (and its
// compile test runs) with the CUDA toolkit alone. The LibTorch-facing side is CudaStats.cpp.
#ifndef MPNANNY_CUDA_STATKERNEL_H
#define MPNANNY_CUDA_STATKERNEL_H

#include <cuda_runtime_api.h>

#include <cstdint>

#include "mpnanny/ElementClass.h"

namespace mpnanny::cuda {

enum class ElementType : int { Half = 0, BFloat16 = 1, Float = 2, Double = 3 };

/// What threads, warps and blocks count and reduce: the result without its histogram, which goes
/// through shared memory instead (it would only cost registers there). The sums and extremes
/// cover finite elements only, as on the CPU.
struct DeviceScalars : ClassCounts<unsigned long long>, FiniteSummary {
  MPNANNY_HD void merge(const DeviceScalars& other) {
    add_counts(other);
    merge_summary(other);
  }
};

/// The device-wide result; mirrors mpnanny::TensorStats without its numel.
struct DeviceStats : DeviceScalars {
  unsigned long long histogram[kHistogramBuckets];
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
