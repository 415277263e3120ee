#include "CudaStats.h"

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <memory>
#include <unordered_map>

#include "StatKernel.h"

namespace mpnanny {

bool compute_tensor_stats_cuda(const at::Tensor& tensor, TensorStats& out) noexcept {
  try {
    if (!tensor.defined() || !tensor.is_cuda() || !is_observable_tensor(tensor)) return false;
    cuda::ElementType type;
    switch (tensor.scalar_type()) {
      case at::kHalf: type = cuda::ElementType::Half; break;
      case at::kBFloat16: type = cuda::ElementType::BFloat16; break;
      case at::kFloat: type = cuda::ElementType::Float; break;
      case at::kDouble: type = cuda::ElementType::Double; break;
      default: return false;
    }
    TensorStats stats;
    stats.numel = tensor.numel();
    if (stats.numel == 0) {
      out = stats;
      return true;
    }
    const c10::cuda::CUDAGuard device_guard(tensor.device());
    // The kernel reads flat memory: a strided view costs one device copy, still far cheaper
    // than the host copy it replaces.
    const at::Tensor flat = tensor.contiguous();
    const int device = tensor.get_device();
    // One workspace per device and host thread: a pass ends with a stream synchronization, so the
    // thread that started it is the only one that can be using it.
    thread_local std::unordered_map<int, std::unique_ptr<cuda::StatWorkspace>> workspaces;
    auto& workspace = workspaces[device];
    if (!workspace) workspace = std::make_unique<cuda::StatWorkspace>();
    if (workspace->prepare(device) != cudaSuccess) return false;

    cuda::DeviceStats result;
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device).stream();
    if (cuda::compute_tensor_stats(flat.data_ptr(), flat.numel(), type, stream, *workspace, result) != cudaSuccess) {
      cudaGetLastError();  // clear a sticky launch error so that training does not trip on it
      return false;
    }
    stats.assign_counts(result);
    static_cast<FiniteSummary&>(stats) = result;
    for (int b = 0; b < kHistogramBuckets; ++b) stats.histogram[b] = static_cast<int64_t>(result.histogram[b]);
    out = stats;
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace mpnanny
