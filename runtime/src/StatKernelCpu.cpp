// The CPU stat kernel: compute_tensor_stats for CPU tensors, the CPU's counterpart of
// cuda/StatKernel.cu. One parallel pass over a strided tensor: rows of elements, read block by
// block (StatKernelCpuBlock.h) in the copy of the kernel this CPU runs best, picked at load time.
#include "StatKernelCpu.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "Environment.h"
#include "StatKernelCpuBlock.h"

// at::parallel_for is a `#pragma omp parallel` inline in LibTorch's headers when LibTorch uses
// OpenMP: compiled without OpenMP it silently runs on one thread (runtime/CMakeLists.txt).
#if AT_PARALLEL_OPENMP && !defined(_OPENMP)
#error "StatKernelCpu.cpp must be compiled with OpenMP, or at::parallel_for runs serially"
#endif

namespace mpnanny {

namespace {

/// Reads a run into `counts`, block by block. Inlined into a baseline, an AVX2, an AVX-512 and a
/// transposing AVX-512 copy (see pick_run_scanner).
template <typename Scalar, int kWidth, FieldCounting kCounting = FieldCounting::kCompare>
__attribute__((always_inline)) inline void scan_run(const Scalar* source, int64_t stride, int64_t count,
                                                    ChunkCounts& counts) {
  alignas(64) float buffer[kBlock];
  for (int64_t done = 0; done < count; done += kBlock) {
    const int64_t block = std::min(kBlock, count - done);
    if constexpr (std::is_same_v<Scalar, c10::BFloat16>) {
      if (stride == 1) {  // the fast path reads it as it is (load_quad)
        scan_block<kWidth, kCounting>(source + done, block, counts, buffer);
        continue;
      }
    }
    const float* floats = widen_block<Scalar, kWidth>(source + done * stride, stride, block, buffer);
    scan_block<kWidth, kCounting>(floats, block, counts, buffer);
  }
}

/// Scans one run of `count` elements `stride` apart, widening to float where needed.
template <typename Scalar>
using RunScanner = void (*)(const Scalar*, int64_t, int64_t, ChunkCounts&);

template <typename Scalar>
void scan_run_baseline(const Scalar* source, int64_t stride, int64_t count, ChunkCounts& counts) {
  scan_run<Scalar, 16>(source, stride, count, counts);
}

#ifdef MPNANNY_X86_COPIES
// AVX2: the fast path in 32-byte vectors, and F16C for half; chosen at load time, so the library
// still runs on any x86-64.
template <typename Scalar>
__attribute__((target("avx2,fma,f16c"))) void scan_run_avx2(const Scalar* source, int64_t stride, int64_t count,
                                                            ChunkCounts& counts) {
  scan_run<Scalar, 32>(source, stride, count, counts);
}

// AVX-512: the fast path's 16-lane vectors fill one register each, and the general path (256-bit
// vectors by GCC's default preference) gets 32 registers, which hold all of its counters without
// spilling, and mask registers for the compares.
template <typename Scalar>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c"))) void scan_run_avx512(const Scalar* source,
                                                                                                 int64_t stride,
                                                                                                 int64_t count,
                                                                                                 ChunkCounts& counts) {
  scan_run<Scalar, 64>(source, stride, count, counts);
}

// AVX-512 with VBMI, BITALG and GFNI: the same, with the fields counted by byte transposition.
template <typename Scalar>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512vbmi,avx512bitalg,gfni,avx2,fma,f16c"))) void
scan_run_avx512_transpose(const Scalar* source, int64_t stride, int64_t count, ChunkCounts& counts) {
  scan_run<Scalar, 64, FieldCounting::kTranspose>(source, stride, count, counts);
}
#endif

/// The widest copy this CPU runs. MPNANNY_STATS_ISA=baseline|avx2|avx512 caps it: a machine with
/// the transposing copy would otherwise only ever test that one (CTest runs the stat tests once
/// per cap).
template <typename Scalar>
RunScanner<Scalar> pick_run_scanner() {
#ifdef MPNANNY_X86_COPIES
  const std::string cap = stat_kernel_cap_from_environment();
  if (cap == "baseline") return &scan_run_baseline<Scalar>;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool transpose = avx512 && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bitalg") &&
                         __builtin_cpu_supports("gfni");
  if (cap != "avx2" && cap != "avx512" && transpose) return &scan_run_avx512_transpose<Scalar>;
  if (cap != "avx2" && avx512) return &scan_run_avx512<Scalar>;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    return &scan_run_avx2<Scalar>;
  }
#endif
  return &scan_run_baseline<Scalar>;
}

template <typename Scalar>
const RunScanner<Scalar> run_scanner = pick_run_scanner<Scalar>();

}  // namespace

const char* stat_kernel_copy() noexcept {
#ifdef MPNANNY_X86_COPIES
  if (run_scanner<float> == &scan_run_avx512_transpose<float>) return "avx512-transpose";
  if (run_scanner<float> == &scan_run_avx512<float>) return "avx512";
  if (run_scanner<float> == &scan_run_avx2<float>) return "avx2";
#endif
  return "baseline";
}

namespace {

/// Generic path for double: one element at a time through classify_magnitude, so that a double
/// is judged without first rounding it to float.
void scan_double_run(const double* source, int64_t stride, int64_t count, ChunkCounts& counts) {
  for (int64_t i = 0; i < count; ++i) {
    const double value = source[i * stride];
    const double magnitude = value < 0 ? -value : value;
    const ElementClass cls = classify_magnitude(magnitude);
    counts.count_flags(cls);
    if (cls.is_nan || cls.is_inf) {
      if (cls.is_inf) ++counts.histogram[kHistogramBuckets - 1];
      continue;
    }
    if (!cls.is_zero) {
      counts.max_abs_double = std::max(counts.max_abs_double, magnitude);
      counts.min_abs_nonzero_double = std::min(counts.min_abs_nonzero_double, magnitude);
      ++counts.histogram[cls.bucket];
    }
    counts.sum += value;
    counts.sum_squares += value * value;
  }
}

/// The magnitude whose float bits are `bits` (finite), as a double, by integer arithmetic: a
/// float-to-double conversion reads an fp32 subnormal as zero where the thread has DAZ on
/// (at::globalContext().setFlushDenormal(true)).
double magnitude_of_float_bits(int32_t bits) {
  const int32_t field = bits >> 23, mantissa = bits & 0x7fffff;
  return field == 0 ? std::ldexp(static_cast<double>(mantissa), -149)
                    : std::ldexp(static_cast<double>(mantissa | 0x800000), field - 150);
}

void store(const ChunkCounts& counts, bool from_double, int64_t numel, TensorStats& stats) {
  stats.numel = numel;
  stats.assign_counts(counts);
  stats.sum = counts.sum;
  stats.sum_squares = counts.sum_squares;
  for (int b = 0; b < kHistogramBuckets; ++b) stats.histogram[b] = counts.histogram[b];
  if (from_double) {
    stats.max_abs = counts.max_abs_double;
    stats.min_abs_nonzero = counts.min_abs_nonzero_double;
  } else {
    stats.max_abs = magnitude_of_float_bits(counts.max_bits);
    stats.min_abs_nonzero = counts.min_nonzero_bits < kInfinityBits ? magnitude_of_float_bits(counts.min_nonzero_bits)
                                                                    : std::numeric_limits<double>::infinity();
  }
}

/// A strided view reduced to rows: `row_count` rows of `row_length` elements `inner_stride`
/// apart; row r starts at the offset of the r-th index of the outer dimensions.
struct RowLayout {
  std::vector<int64_t> outer_sizes;
  std::vector<int64_t> outer_strides;
  int64_t row_length = 1;
  int64_t inner_stride = 1;
  int64_t row_count = 1;

  int64_t row_offset(int64_t row) const {
    int64_t offset = 0;
    for (int64_t d = static_cast<int64_t>(outer_sizes.size()) - 1; d >= 0; --d) {
      offset += (row % outer_sizes[d]) * outer_strides[d];
      row /= outer_sizes[d];
    }
    return offset;
  }
};

RowLayout make_row_layout(const at::Tensor& tensor) {
  if (tensor.is_contiguous()) {
    RowLayout layout;
    layout.row_length = tensor.numel();
    return layout;
  }
  // The statistics do not depend on the order elements are read in, so dimensions are walked
  // in memory order (largest stride outermost, broadcast stride-0 dimensions outside all), which
  // makes a transposed or permuted tensor a contiguous read; then adjacent dimensions that are
  // contiguous with each other merge, so a sliced tensor is walked in as few, as long rows as
  // possible.
  std::vector<int64_t> order;
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (tensor.size(d) != 1) order.push_back(d);
  }
  const auto outer_key = [&](int64_t d) {
    return tensor.stride(d) == 0 ? std::numeric_limits<int64_t>::max() : tensor.stride(d);
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return outer_key(a) > outer_key(b); });
  std::vector<int64_t> sizes, strides;
  for (const int64_t d : order) {
    sizes.push_back(tensor.size(d));
    strides.push_back(tensor.stride(d));
  }
  std::vector<int64_t> merged_sizes, merged_strides;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!merged_sizes.empty() && merged_strides.back() == sizes[d] * strides[d]) {
      merged_sizes.back() *= sizes[d];
      merged_strides.back() = strides[d];
    } else {
      merged_sizes.push_back(sizes[d]);
      merged_strides.push_back(strides[d]);
    }
  }
  RowLayout layout;
  if (merged_sizes.empty()) return layout;
  layout.row_length = merged_sizes.back();
  layout.inner_stride = merged_strides.back();
  merged_sizes.pop_back();
  merged_strides.pop_back();
  layout.outer_sizes = merged_sizes;
  layout.outer_strides = merged_strides;
  for (int64_t size : merged_sizes) layout.row_count *= size;
  return layout;
}

/// The calling thread's CountingBins, or fresh ones if that thread is already using its own.
class BorrowedBins {
 public:
  BorrowedBins() {
    // Held in place, not through a pointer with a destructor: exit() destroys the main thread's
    // thread_locals before it runs the atexit handler that closes watch()'s nanny, whose last
    // step still computes stats here (a unique_ptr's bins were freed memory by then).
    static_assert(std::is_trivially_destructible_v<CountingBins>);
    thread_local CountingBins t_bins;
    thread_local bool t_in_use = false;
    if (!t_in_use) {
      in_use_ = &t_in_use;
      t_in_use = true;
      bins_ = &t_bins;
    } else {
      own_ = std::make_unique<CountingBins>();
      bins_ = own_.get();
    }
  }
  ~BorrowedBins() {
    if (in_use_) *in_use_ = false;
  }
  BorrowedBins(const BorrowedBins&) = delete;
  BorrowedBins& operator=(const BorrowedBins&) = delete;
  CountingBins& operator*() const { return *bins_; }

 private:
  CountingBins* bins_ = nullptr;
  bool* in_use_ = nullptr;
  std::unique_ptr<CountingBins> own_;
};

template <typename Scalar>
TensorStats stats_of(const at::Tensor& tensor) {
  constexpr bool kIsDouble = std::is_same_v<Scalar, double>;
  const Scalar* base = tensor.data_ptr<Scalar>();
  const int64_t numel = tensor.numel();
  const RowLayout layout = make_row_layout(tensor);
  const int64_t total = layout.row_count * layout.row_length;

  TensorStats result;
  std::mutex merge_mutex;
  // Work is split over the flat element index so that one long row and many short rows both
  // parallelize; each task walks its own slice of rows and merges one partial at its end.
  constexpr int64_t kGrain = 1 << 15;
  at::parallel_for(0, total, kGrain, [&](int64_t begin, int64_t end) {
    const BorrowedBins borrowed;
    const DenormalOperandFlag denormal_flag;
    ChunkCounts counts(*borrowed, kIsDouble ? nullptr : &denormal_flag);
    int64_t index = begin;
    while (index < end) {
      const int64_t row = index / layout.row_length;
      const int64_t column = index % layout.row_length;
      const int64_t row_end = std::min({end, (row + 1) * layout.row_length, index + kFoldEvery - counts.unfolded});
      const Scalar* start = base + layout.row_offset(row) + column * layout.inner_stride;
      if constexpr (kIsDouble) {
        scan_double_run(start, layout.inner_stride, row_end - index, counts);
      } else {
        run_scanner<Scalar>(start, layout.inner_stride, row_end - index, counts);
        if (counts.unfolded >= kFoldEvery) counts.fold();
      }
      index = row_end;
    }
    if (!kIsDouble) {
      counts.fold();
      counts.finish_float_counts();
    }
    TensorStats partial;
    store(counts, kIsDouble, end - begin, partial);
    std::lock_guard<std::mutex> lock(merge_mutex);
    result.merge(partial);
  });
  result.numel = numel;
  return result;
}

}  // namespace

TensorStats compute_tensor_stats_cpu(const at::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case at::kFloat: return stats_of<float>(tensor);
    case at::kDouble: return stats_of<double>(tensor);
    case at::kHalf: return stats_of<c10::Half>(tensor);
    case at::kBFloat16: return stats_of<c10::BFloat16>(tensor);
    default: return {};
  }
}

}  // namespace mpnanny
