#include "MemoryStats.h"

#include <unistd.h>

#include <fstream>

#if defined(MPNANNY_WITH_CUDA) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#define MPNANNY_CUDA_ALLOCATOR_STATS 1
#endif

namespace mpnanny {

int64_t resident_set_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return -1;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

MemorySample sample_memory() {
  MemorySample sample;
  sample.rss_bytes = resident_set_bytes();
#ifdef MPNANNY_CUDA_ALLOCATOR_STATS
  try {
    if (c10::cuda::device_count() > 0) {
      const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
      // Index 0 is StatType::AGGREGATE (both pools), whose namespace moved between LibTorch versions.
      constexpr size_t aggregate = 0;
      sample.cuda_allocated_bytes = stats.allocated_bytes[aggregate].current;
      sample.cuda_allocated_peak_bytes = stats.allocated_bytes[aggregate].peak;
      sample.cuda_reserved_bytes = stats.reserved_bytes[aggregate].current;
      sample.cuda_reserved_peak_bytes = stats.reserved_bytes[aggregate].peak;
      sample.cuda_alloc_retries = stats.num_alloc_retries;
    }
  } catch (...) {
    // No usable device or allocator: the resident set is what there is.
  }
#endif
  return sample;
}

}  // namespace mpnanny
