// One-pass tensor statistics on the GPU. The per-element classification is ElementClass.h's, the
// same code the CPU kernel runs, so both agree exactly on every count; only the order of the
// floating-point sums differs.
#include "StatKernel.h"

#include <cuda_fp16.h>

namespace mpnanny::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;
// Enough resident blocks to hide memory latency; more only add partials to reduce.
constexpr int kBlocksPerSm = 4;

// Called by every lane of a warp together (the loops below keep warps converged): lanes with the
// same bucket are counted by one shared-memory atomic, since real tensors crowd a few binades.
__device__ inline void count_bucket(int bucket, unsigned* warp_histogram) {
  const unsigned peers = __match_any_sync(kFullMask, bucket);
  const int lane = threadIdx.x & 31;
  if (bucket >= 0 && (__ffs(peers) - 1) == lane) atomicAdd(&warp_histogram[bucket], __popc(peers));
}

// Half and bfloat16 widen to float exactly, as on the CPU; the classification then runs on the
// float's bits.
__device__ inline void add_float(float value, bool valid, DeviceScalars& t, unsigned* warp_histogram) {
  const uint32_t bits = __float_as_uint(value) & 0x7fffffffu;
  int bucket = -1;
  if (valid) {
    const ElementClass c = classify_magnitude_bits(bits);
    t.count_flags(c);
    if (bits < Fp32Thresholds::kInfinity) {
      const double magnitude = static_cast<double>(__uint_as_float(bits));
      t.max_abs = fmax(t.max_abs, magnitude);
      if (bits != 0u) t.min_abs_nonzero = fmin(t.min_abs_nonzero, magnitude);
      t.sum += value;
      t.sum_squares += static_cast<double>(value) * value;
    }
    bucket = c.bucket;
  }
  count_bucket(bucket, warp_histogram);
}

__device__ inline void add_double(double value, bool valid, DeviceScalars& t, unsigned* warp_histogram) {
  int bucket = -1;
  if (valid) {
    const double magnitude = fabs(value);
    const ElementClass c = classify_magnitude(magnitude);
    t.count_flags(c);
    if (!c.is_nan && !c.is_inf) {
      if (!c.is_zero) {
        t.max_abs = fmax(t.max_abs, magnitude);
        t.min_abs_nonzero = fmin(t.min_abs_nonzero, magnitude);
      }
      t.sum += value;
      t.sum_squares += value * value;
    }
    bucket = c.bucket;
  }
  count_bucket(bucket, warp_histogram);
}

template <typename Element>
struct Reader;
// Half and bfloat16: eight 16-bit elements a vector, each widened to float (exactly) by Widen.
template <typename Widen>
struct SixteenBitReader {
  static constexpr int kPerVector = 8;
  __device__ static void add(const uint4& raw, DeviceScalars& t, unsigned* h, bool valid) {
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      add_float(Widen::widen(words[w] & 0xffffu), valid, t, h);
      add_float(Widen::widen(words[w] >> 16), valid, t, h);
    }
  }
  __device__ static void add_one(const void* data, int64_t i, DeviceScalars& t, unsigned* h, bool valid) {
    const uint32_t bits = valid ? static_cast<const unsigned short*>(data)[i] : 0u;
    add_float(Widen::widen(bits), valid, t, h);
  }
};
struct WidenHalf {
  __device__ static float widen(uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
};
// bfloat16 is the upper half of a float: widening is a shift, no cuda_bf16.h needed.
struct WidenBFloat16 {
  __device__ static float widen(uint32_t bits) { return __uint_as_float(bits << 16); }
};
struct BFloat16Tag {};
template <>
struct Reader<__half> : SixteenBitReader<WidenHalf> {};
template <>
struct Reader<BFloat16Tag> : SixteenBitReader<WidenBFloat16> {};
template <>
struct Reader<float> {
  static constexpr int kPerVector = 4;
  __device__ static void add(const uint4& raw, DeviceScalars& t, unsigned* h, bool valid) {
    add_float(__uint_as_float(raw.x), valid, t, h);
    add_float(__uint_as_float(raw.y), valid, t, h);
    add_float(__uint_as_float(raw.z), valid, t, h);
    add_float(__uint_as_float(raw.w), valid, t, h);
  }
  __device__ static void add_one(const void* data, int64_t i, DeviceScalars& t, unsigned* h, bool valid) {
    add_float(valid ? static_cast<const float*>(data)[i] : 0.0f, valid, t, h);
  }
};
template <>
struct Reader<double> {
  static constexpr int kPerVector = 2;
  __device__ static void add(const uint4& raw, DeviceScalars& t, unsigned* h, bool valid) {
    add_double(__hiloint2double(static_cast<int>(raw.y), static_cast<int>(raw.x)), valid, t, h);
    add_double(__hiloint2double(static_cast<int>(raw.w), static_cast<int>(raw.z)), valid, t, h);
  }
  __device__ static void add_one(const void* data, int64_t i, DeviceScalars& t, unsigned* h, bool valid) {
    add_double(valid ? static_cast<const double*>(data)[i] : 0.0, valid, t, h);
  }
};

__device__ inline void warp_reduce(DeviceScalars& t) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    DeviceScalars o;
    for_each_class(o, t, [offset](unsigned long long& mine, unsigned long long theirs) {
      mine = __shfl_down_sync(kFullMask, theirs, offset);
    });
    o.sum = __shfl_down_sync(kFullMask, t.sum, offset);
    o.sum_squares = __shfl_down_sync(kFullMask, t.sum_squares, offset);
    o.max_abs = __shfl_down_sync(kFullMask, t.max_abs, offset);
    o.min_abs_nonzero = __shfl_down_sync(kFullMask, t.min_abs_nonzero, offset);
    t.merge(o);
  }
}

// Shared memory for one DeviceScalars per warp. A __shared__ variable may not have a constructor,
// and DeviceScalars starts at zero by one: this is its storage, written before it is read.
struct WarpScratch {
  alignas(DeviceScalars) unsigned char bytes[kWarps * sizeof(DeviceScalars)];
  __device__ DeviceScalars& operator[](int warp) { return reinterpret_cast<DeviceScalars*>(bytes)[warp]; }
};

// Reduces every thread's `mine` into `out` (thread 0 writes). `scratch` holds one entry per warp.
__device__ inline void block_reduce(DeviceScalars mine, WarpScratch& scratch, DeviceStats* out) {
  warp_reduce(mine);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) scratch[warp] = mine;
  __syncthreads();
  if (warp == 0) {
    DeviceScalars t = lane < kWarps ? scratch[lane] : DeviceScalars{};
    warp_reduce(t);
    if (lane == 0) static_cast<DeviceScalars&>(*out) = t;
  }
}

// Pass 1: each block reads a grid-strided share of the tensor, 16 bytes per load where the data
// is aligned, and writes one partial result. Loop trip counts depend on the block only, so whole
// warps stay converged for the warp-wide bucket matching.
template <typename Element>
__global__ void __launch_bounds__(kThreads)
    partial_stats_kernel(const void* data, int64_t numel, bool vectorized, DeviceStats* partials) {
  using R = Reader<Element>;
  __shared__ unsigned histogram[kWarps][kHistogramBuckets];
  __shared__ WarpScratch scratch;
  for (int i = threadIdx.x; i < kWarps * kHistogramBuckets; i += kThreads) (&histogram[0][0])[i] = 0u;
  __syncthreads();
  unsigned* warp_histogram = histogram[threadIdx.x >> 5];

  DeviceScalars t;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t scalar_begin = 0;
  if (vectorized) {
    const int64_t vectors = numel / R::kPerVector;
    const uint4* v = static_cast<const uint4*>(data);
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * kThreads; base < vectors; base += stride) {
      const int64_t i = base + threadIdx.x;
      const bool valid = i < vectors;
      // Streaming load: the tensor is read once, so keep it from evicting the training's data.
      const uint4 raw = valid ? __ldcs(v + i) : make_uint4(0u, 0u, 0u, 0u);
      R::add(raw, t, warp_histogram, valid);
    }
    scalar_begin = vectors * R::kPerVector;
  }
  for (int64_t base = scalar_begin + static_cast<int64_t>(blockIdx.x) * kThreads; base < numel; base += stride) {
    const int64_t i = base + threadIdx.x;
    R::add_one(data, i, t, warp_histogram, i < numel);
  }

  __syncthreads();  // histogram complete
  block_reduce(t, scratch, &partials[blockIdx.x]);
  for (int b = threadIdx.x; b < kHistogramBuckets; b += kThreads) {
    unsigned long long total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += histogram[w][b];
    partials[blockIdx.x].histogram[b] = total;
  }
}

// Pass 2: one block folds the partials into the result.
__global__ void __launch_bounds__(kThreads)
    final_stats_kernel(const DeviceStats* partials, int blocks, DeviceStats* result) {
  __shared__ WarpScratch scratch;
  DeviceScalars mine;
  for (int b = threadIdx.x; b < blocks; b += kThreads) mine.merge(partials[b]);
  block_reduce(mine, scratch, result);
  for (int bucket = threadIdx.x; bucket < kHistogramBuckets; bucket += kThreads) {
    unsigned long long total = 0;
    for (int b = 0; b < blocks; ++b) total += partials[b].histogram[bucket];
    result->histogram[bucket] = total;
  }
}

template <typename Element>
cudaError_t launch(const void* data, int64_t numel, cudaStream_t stream, StatWorkspace& workspace) {
  using R = Reader<Element>;
  const bool vectorized = (reinterpret_cast<uintptr_t>(data) % sizeof(uint4)) == 0;
  const int64_t units = vectorized ? numel / R::kPerVector + 1 : numel;
  const int64_t wanted = (units + kThreads - 1) / kThreads;
  const int blocks =
      static_cast<int>(wanted < workspace.grid_size() ? (wanted < 1 ? 1 : wanted) : workspace.grid_size());
  partial_stats_kernel<Element><<<blocks, kThreads, 0, stream>>>(data, numel, vectorized, workspace.partials());
  final_stats_kernel<<<1, kThreads, 0, stream>>>(workspace.partials(), blocks, workspace.device_result());
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  return cudaMemcpyAsync(workspace.host_result(), workspace.device_result(), sizeof(DeviceStats),
                         cudaMemcpyDeviceToHost, stream);
}

}  // namespace

StatWorkspace::~StatWorkspace() {
  // Freed on the device they were allocated on; errors at teardown (driver already shut down
  // at process exit) are ignored on purpose.
  if (device_ < 0) return;
  int current = -1;
  cudaGetDevice(&current);
  cudaSetDevice(device_);
  cudaFree(partials_);
  cudaFree(device_result_);
  cudaFreeHost(host_result_);
  if (current >= 0) cudaSetDevice(current);
}

cudaError_t StatWorkspace::prepare(int device) {
  if (device_ == device) return cudaSuccess;
  if (device_ >= 0) return cudaErrorInvalidDevice;  // one workspace per device
  int sms = 0;
  cudaError_t error = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (error != cudaSuccess) return error;
  const int grid = sms * kBlocksPerSm;
  if ((error = cudaMalloc(&partials_, sizeof(DeviceStats) * grid)) != cudaSuccess) return error;
  if ((error = cudaMalloc(&device_result_, sizeof(DeviceStats))) != cudaSuccess) return error;
  if ((error = cudaMallocHost(&host_result_, sizeof(DeviceStats))) != cudaSuccess) return error;
  grid_size_ = grid;
  device_ = device;
  return cudaSuccess;
}

cudaError_t launch_tensor_stats(const void* data, int64_t numel, ElementType type, cudaStream_t stream,
                                StatWorkspace& workspace) {
  if (workspace.grid_size() <= 0) return cudaErrorNotReady;
  switch (type) {
    case ElementType::Half: return launch<__half>(data, numel, stream, workspace);
    case ElementType::BFloat16: return launch<BFloat16Tag>(data, numel, stream, workspace);
    case ElementType::Float: return launch<float>(data, numel, stream, workspace);
    case ElementType::Double: return launch<double>(data, numel, stream, workspace);
  }
  return cudaErrorInvalidValue;
}

cudaError_t compute_tensor_stats(const void* data, int64_t numel, ElementType type, cudaStream_t stream,
                                 StatWorkspace& workspace, DeviceStats& out) {
  cudaError_t error = launch_tensor_stats(data, numel, type, stream, workspace);
  if (error != cudaSuccess) return error;
  if ((error = cudaStreamSynchronize(stream)) != cudaSuccess) return error;
  out = *workspace.host_result();
  return cudaSuccess;
}

}  // namespace mpnanny::cuda
