// Memory of the training process on a sampled step: the CUDA caching allocator's statistics where
// this build's LibTorch has CUDA and a device is in use, the process's resident set otherwise.
#ifndef MPNANNY_MEMORYSTATS_H
#define MPNANNY_MEMORYSTATS_H

#include <cstdint>

namespace mpnanny {

/// -1 marks what was not measured.
struct MemorySample {
  int64_t rss_bytes = -1;
  int64_t cuda_allocated_bytes = -1;       ///< current, all devices' pools summed
  int64_t cuda_allocated_peak_bytes = -1;  ///< since the process started (or the last reset)
  int64_t cuda_reserved_bytes = -1;
  int64_t cuda_reserved_peak_bytes = -1;
  int64_t cuda_alloc_retries = -1;  ///< cudaMalloc calls retried after freeing cached blocks
};

/// Resident set of this process from /proc/self/statm, or -1.
int64_t resident_set_bytes();

/// The sample for the current device. The CUDA side is compiled only where LibTorch has CUDA
/// (MPNANNY_WITH_CUDA and c10/cuda/CUDACachingAllocator.h) and read only when a device exists; an
/// allocator that has not allocated yet answers with an error, and the CUDA fields stay -1.
MemorySample sample_memory();

}  // namespace mpnanny

#endif  // MPNANNY_MEMORYSTATS_H
