#include "MemoryStats.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#if defined(MPNANNY_WITH_CUDA) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#define MPNANNY_CUDA_ALLOCATOR_STATS 1
#endif

namespace mpnanny {

int64_t resident_set_bytes() {
  // Read on every traced step: the file stays open (opening it costs more than reading it),
  // and is opened again in a forked child, whose /proc/self is another process.
  static std::mutex mutex;
  static int descriptor = -1;
  static pid_t opened_by = 0;
  char text[128];
  ssize_t length = -1;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (descriptor >= 0 && opened_by != getpid()) {
      close(descriptor);
      descriptor = -1;
    }
    if (descriptor < 0) {
      descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
      opened_by = getpid();
    }
    if (descriptor >= 0) length = pread(descriptor, text, sizeof text - 1, 0);
  }
  if (length <= 0) return -1;
  text[length] = '\0';
  long long total_pages = 0, resident_pages = 0;
  if (std::sscanf(text, "%lld %lld", &total_pages, &resident_pages) != 2) return -1;
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
