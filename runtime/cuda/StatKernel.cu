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

struct ThreadCounts {
  unsigned long long nan = 0, inf = 0, zero = 0;
  unsigned long long h_over = 0, h_sub = 0, h_flush = 0, b_over = 0, b_sub = 0, b_flush = 0;
  double sum = 0.0, sum_squares = 0.0;
  double max_abs = 0.0;
  double min_abs = __builtin_huge_val();
};

__device__ inline void count_class(const ElementClass& c, ThreadCounts& t) {
  t.nan += c.is_nan;
  t.inf += c.is_inf;
  t.zero += c.is_zero;
  t.h_over += c.fp16_overflow;
  t.h_sub += c.fp16_subnormal;
  t.h_flush += c.fp16_flush;
  t.b_over += c.bf16_overflow;
  t.b_sub += c.bf16_subnormal;
  t.b_flush += c.bf16_flush;
}

// Called by every lane of a warp together (the loops below keep warps converged): lanes with the
// same bucket are counted by one shared-memory atomic, since real tensors crowd a few binades.
__device__ inline void count_bucket(int bucket, unsigned* warp_histogram) {
  const unsigned peers = __match_any_sync(kFullMask, bucket);
  const int lane = threadIdx.x & 31;
  if (bucket >= 0 && (__ffs(peers) - 1) == lane) atomicAdd(&warp_histogram[bucket], __popc(peers));
}

// Half and bfloat16 widen to float exactly, as on the CPU; the classification then runs on the
// float's bits.
__device__ inline void add_float(float value, bool valid, ThreadCounts& t, unsigned* warp_histogram) {
  const uint32_t bits = __float_as_uint(value) & 0x7fffffffu;
  int bucket = -1;
  if (valid) {
    const ElementClass c = classify_magnitude_bits(bits);
    count_class(c, t);
    if (bits < Fp32Thresholds::kInfinity) {
      const double magnitude = static_cast<double>(__uint_as_float(bits));
      t.max_abs = fmax(t.max_abs, magnitude);
      if (bits != 0u) t.min_abs = fmin(t.min_abs, magnitude);
      t.sum += value;
      t.sum_squares += static_cast<double>(value) * value;
    }
    bucket = c.bucket;
  }
  count_bucket(bucket, warp_histogram);
}

__device__ inline void add_double(double value, bool valid, ThreadCounts& t, unsigned* warp_histogram) {
  int bucket = -1;
  if (valid) {
    const double magnitude = fabs(value);
    const ElementClass c = classify_magnitude(magnitude);
    count_class(c, t);
    if (!c.is_nan && !c.is_inf) {
      if (!c.is_zero) {
        t.max_abs = fmax(t.max_abs, magnitude);
        t.min_abs = fmin(t.min_abs, magnitude);
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
template <>
struct Reader<__half> {
  static constexpr int kPerVector = 8;
  __device__ static void add(const uint4& raw, ThreadCounts& t, unsigned* h, bool valid) {
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      add_float(__half2float(__ushort_as_half(static_cast<unsigned short>(words[w] & 0xffffu))), valid, t, h);
      add_float(__half2float(__ushort_as_half(static_cast<unsigned short>(words[w] >> 16))), valid, t, h);
    }
  }
  __device__ static void add_one(const void* data, int64_t i, ThreadCounts& t, unsigned* h, bool valid) {
    const float value = valid ? __half2float(static_cast<const __half*>(data)[i]) : 0.0f;
    add_float(value, valid, t, h);
  }
};
// bfloat16 is the upper half of a float: widening is a shift, no cuda_bf16.h needed.
struct BFloat16Tag {};
template <>
struct Reader<BFloat16Tag> {
  static constexpr int kPerVector = 8;
  __device__ static void add(const uint4& raw, ThreadCounts& t, unsigned* h, bool valid) {
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      add_float(__uint_as_float(words[w] << 16), valid, t, h);
      add_float(__uint_as_float(words[w] & 0xffff0000u), valid, t, h);
    }
  }
  __device__ static void add_one(const void* data, int64_t i, ThreadCounts& t, unsigned* h, bool valid) {
    const uint32_t bits = valid ? static_cast<uint32_t>(static_cast<const unsigned short*>(data)[i]) << 16 : 0u;
    add_float(__uint_as_float(bits), valid, t, h);
  }
};
template <>
struct Reader<float> {
  static constexpr int kPerVector = 4;
  __device__ static void add(const uint4& raw, ThreadCounts& t, unsigned* h, bool valid) {
    add_float(__uint_as_float(raw.x), valid, t, h);
    add_float(__uint_as_float(raw.y), valid, t, h);
    add_float(__uint_as_float(raw.z), valid, t, h);
    add_float(__uint_as_float(raw.w), valid, t, h);
  }
  __device__ static void add_one(const void* data, int64_t i, ThreadCounts& t, unsigned* h, bool valid) {
    add_float(valid ? static_cast<const float*>(data)[i] : 0.0f, valid, t, h);
  }
};
template <>
struct Reader<double> {
  static constexpr int kPerVector = 2;
  __device__ static void add(const uint4& raw, ThreadCounts& t, unsigned* h, bool valid) {
    add_double(__hiloint2double(static_cast<int>(raw.y), static_cast<int>(raw.x)), valid, t, h);
    add_double(__hiloint2double(static_cast<int>(raw.w), static_cast<int>(raw.z)), valid, t, h);
  }
  __device__ static void add_one(const void* data, int64_t i, ThreadCounts& t, unsigned* h, bool valid) {
    add_double(valid ? static_cast<const double*>(data)[i] : 0.0, valid, t, h);
  }
};

// The scalar part of DeviceStats: what threads, warps and blocks reduce (the histogram goes
// through shared memory instead, and would only cost registers here).
struct Scalars {
  unsigned long long nan, inf, zero, h_over, h_sub, h_flush, b_over, b_sub, b_flush;
  double sum, sum_squares, max_abs, min_abs;
};

__device__ inline Scalars empty_scalars() {
  Scalars s;
  s.nan = s.inf = s.zero = s.h_over = s.h_sub = s.h_flush = s.b_over = s.b_sub = s.b_flush = 0;
  s.sum = s.sum_squares = s.max_abs = 0.0;
  s.min_abs = __builtin_huge_val();
  return s;
}

__device__ inline Scalars scalars_of(const ThreadCounts& t) {
  return Scalars{t.nan,   t.inf,     t.zero, t.h_over,      t.h_sub,   t.h_flush, t.b_over,
                 t.b_sub, t.b_flush, t.sum,  t.sum_squares, t.max_abs, t.min_abs};
}

__device__ inline Scalars scalars_of(const DeviceStats& d) {
  return Scalars{d.nan_count,   d.inf_count,     d.zero_count,     d.fp16_overflow, d.fp16_subnormal,
                 d.fp16_flush,  d.bf16_overflow, d.bf16_subnormal, d.bf16_flush,    d.sum,
                 d.sum_squares, d.max_abs,       d.min_abs_nonzero};
}

__device__ inline void store(const Scalars& s, DeviceStats* out) {
  out->nan_count = s.nan;
  out->inf_count = s.inf;
  out->zero_count = s.zero;
  out->fp16_overflow = s.h_over;
  out->fp16_subnormal = s.h_sub;
  out->fp16_flush = s.h_flush;
  out->bf16_overflow = s.b_over;
  out->bf16_subnormal = s.b_sub;
  out->bf16_flush = s.b_flush;
  out->sum = s.sum;
  out->sum_squares = s.sum_squares;
  out->max_abs = s.max_abs;
  out->min_abs_nonzero = s.min_abs;
}

__device__ inline void merge(Scalars& into, const Scalars& from) {
  into.nan += from.nan;
  into.inf += from.inf;
  into.zero += from.zero;
  into.h_over += from.h_over;
  into.h_sub += from.h_sub;
  into.h_flush += from.h_flush;
  into.b_over += from.b_over;
  into.b_sub += from.b_sub;
  into.b_flush += from.b_flush;
  into.sum += from.sum;
  into.sum_squares += from.sum_squares;
  into.max_abs = fmax(into.max_abs, from.max_abs);
  into.min_abs = fmin(into.min_abs, from.min_abs);
}

__device__ inline void warp_reduce(Scalars& s) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    Scalars o;
    o.nan = __shfl_down_sync(kFullMask, s.nan, offset);
    o.inf = __shfl_down_sync(kFullMask, s.inf, offset);
    o.zero = __shfl_down_sync(kFullMask, s.zero, offset);
    o.h_over = __shfl_down_sync(kFullMask, s.h_over, offset);
    o.h_sub = __shfl_down_sync(kFullMask, s.h_sub, offset);
    o.h_flush = __shfl_down_sync(kFullMask, s.h_flush, offset);
    o.b_over = __shfl_down_sync(kFullMask, s.b_over, offset);
    o.b_sub = __shfl_down_sync(kFullMask, s.b_sub, offset);
    o.b_flush = __shfl_down_sync(kFullMask, s.b_flush, offset);
    o.sum = __shfl_down_sync(kFullMask, s.sum, offset);
    o.sum_squares = __shfl_down_sync(kFullMask, s.sum_squares, offset);
    o.max_abs = __shfl_down_sync(kFullMask, s.max_abs, offset);
    o.min_abs = __shfl_down_sync(kFullMask, s.min_abs, offset);
    merge(s, o);
  }
}

// Reduces every thread's `mine` into `out` (thread 0 writes). `scratch` holds one entry per warp.
__device__ inline void block_reduce(Scalars mine, Scalars* scratch, DeviceStats* out) {
  warp_reduce(mine);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) scratch[warp] = mine;
  __syncthreads();
  if (warp == 0) {
    Scalars s = lane < kWarps ? scratch[lane] : empty_scalars();
    warp_reduce(s);
    if (lane == 0) store(s, out);
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
  __shared__ Scalars scratch[kWarps];
  for (int i = threadIdx.x; i < kWarps * kHistogramBuckets; i += kThreads) (&histogram[0][0])[i] = 0u;
  __syncthreads();
  unsigned* warp_histogram = histogram[threadIdx.x >> 5];

  ThreadCounts t;
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
  block_reduce(scalars_of(t), scratch, &partials[blockIdx.x]);
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
  __shared__ Scalars scratch[kWarps];
  Scalars mine = empty_scalars();
  for (int b = threadIdx.x; b < blocks; b += kThreads) merge(mine, scalars_of(partials[b]));
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
