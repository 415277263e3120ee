#include "mpnanny/TensorStats.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#ifdef MPNANNY_WITH_CUDA
#include "CudaStats.h"
#endif

namespace mpnanny {

double TensorStats::mean() const {
  const int64_t finite = finite_count();
  return finite > 0 ? sum / static_cast<double>(finite) : 0.0;
}

double TensorStats::norm() const { return std::sqrt(sum_squares); }

void TensorStats::merge(const TensorStats& other) {
  numel += other.numel;
  nan_count += other.nan_count;
  inf_count += other.inf_count;
  zero_count += other.zero_count;
  max_abs = std::max(max_abs, other.max_abs);
  min_abs_nonzero = std::min(min_abs_nonzero, other.min_abs_nonzero);
  sum += other.sum;
  sum_squares += other.sum_squares;
  fp16_overflow += other.fp16_overflow;
  fp16_subnormal += other.fp16_subnormal;
  fp16_flush += other.fp16_flush;
  bf16_overflow += other.bf16_overflow;
  bf16_subnormal += other.bf16_subnormal;
  bf16_flush += other.bf16_flush;
  for (int b = 0; b < kHistogramBuckets; ++b) histogram[b] += other.histogram[b];
}

namespace {

// Fast path for float, half and bfloat16 (widened to float exactly): a block of elements is
// classified by one loop with no data-dependent branches (integer compares on the magnitude's
// bits in int32 lanes, ElementClass.h's classify_magnitude_lane), so GCC vectorizes it; the
// histogram is a second, scalar loop over the same block, still in L1, that only counts
// exponent fields (sign included, 512 bins, four copies so that equal neighbours do not wait on
// each other's increments). The fields fold into log2 buckets (histogram_bucket_of_exponent_field)
// at the end of a stretch, less the zeros and NaNs, which the classification counted.
//
// Sums: each element is widened to double in the vector loop and summed there; a double lane
// holds the square of any float, so sum_squares cannot overflow where the tensor does not, and
// per-lane double partials keep the rounding error far below what the rules look at. A float
// accumulator would be faster by a few percent but overflows on squares above 1.8e19, which is
// exactly the range an exploding gradient reaches.
constexpr int64_t kBlock = 2048;              // int32 lane counters and the block buffer in L1
constexpr int64_t kFoldEvery = int64_t{1} << 24;  // well below 2^32 per uint32 exponent bin
constexpr int32_t kInfinityBits = static_cast<int32_t>(Fp32Thresholds::kInfinity);

struct ChunkCounts {
  int64_t nan_count = 0, inf_count = 0, zero_count = 0;
  int64_t fp16_overflow = 0, fp16_subnormal = 0, fp16_flush = 0;
  int64_t bf16_overflow = 0, bf16_subnormal = 0, bf16_flush = 0;
  double sum = 0, sum_squares = 0;
  int32_t max_bits = 0;                        // float path: max |x| as bits
  int32_t min_nonzero_bits = kInfinityBits;    // float path
  double max_abs_double = 0;                   // double path
  double min_abs_nonzero_double = std::numeric_limits<double>::infinity();
  int64_t histogram[kHistogramBuckets] = {};
  uint32_t exponent_fields[4][512] = {};       // float path, folded into histogram
  int64_t unfolded = 0;                        // elements counted in exponent_fields

  void fold_exponent_fields() {
    for (int field = 0; field < 256; ++field) {
      int64_t count = 0;
      for (const auto& copy : exponent_fields) count += int64_t{copy[field]} + copy[field + 256];
      histogram[histogram_bucket_of_exponent_field(field)] += count;
    }
    std::memset(exponent_fields, 0, sizeof exponent_fields);
    unfolded = 0;
  }
};

/// Classifies `count` (at most kBlock) contiguous floats into `counts`. Inlined into a baseline
/// and an AVX2 copy (see pick_block_scanner).
__attribute__((always_inline)) inline void scan_float_block(const float* values, int64_t count,
                                                            ChunkCounts& counts) {
  int32_t nan = 0, inf = 0, zero = 0, h_over = 0, h_sub = 0, h_flush = 0, b_over = 0, b_sub = 0, b_flush = 0;
  int32_t max_bits = counts.max_bits, min_bits = counts.min_nonzero_bits;
  double sum = 0, sum_squares = 0;
  // The pragma (honoured with -fopenmp-simd, no OpenMP runtime) allows the double sums to be
  // reassociated across lanes.
#pragma omp simd reduction(+ : nan, inf, zero, h_over, h_sub, h_flush, b_over, b_sub, b_flush, sum, sum_squares) \
    reduction(max : max_bits) reduction(min : min_bits)
  for (int64_t i = 0; i < count; ++i) {
    int32_t raw;
    std::memcpy(&raw, &values[i], sizeof raw);
    const int32_t bits = raw & 0x7fffffff;
    const MagnitudeFlags<int32_t> flags = classify_magnitude_lane(bits);
    nan += flags.is_nan;
    inf += flags.is_inf;
    zero += flags.is_zero;
    h_over += flags.fp16_overflow;
    h_sub += flags.fp16_subnormal;
    h_flush += flags.fp16_flush;
    b_over += flags.bf16_overflow;
    b_sub += flags.bf16_subnormal;
    b_flush += flags.bf16_flush;
    const bool finite = bits < kInfinityBits;
    const int32_t finite_bits = finite ? bits : 0;
    max_bits = finite_bits > max_bits ? finite_bits : max_bits;
    const int32_t nonzero_bits = (finite && bits != 0) ? bits : kInfinityBits;
    min_bits = nonzero_bits < min_bits ? nonzero_bits : min_bits;
    // Non-finite elements add 0. The mask is integer arithmetic, not the bool above: GCC 12 does
    // not vectorize a loop where one comparison selects both int32 and float lanes.
    const int32_t finite_mask = (bits - kInfinityBits) >> 31;  // all ones below infinity
    const int32_t finite_raw = raw & finite_mask;
    float finite_float;
    std::memcpy(&finite_float, &finite_raw, sizeof finite_float);
    const double finite_value = finite_float;
    sum += finite_value;
    sum_squares += finite_value * finite_value;
  }
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    uint32_t raw[4];
    std::memcpy(raw, &values[i], sizeof raw);
    ++counts.exponent_fields[0][raw[0] >> 23];
    ++counts.exponent_fields[1][raw[1] >> 23];
    ++counts.exponent_fields[2][raw[2] >> 23];
    ++counts.exponent_fields[3][raw[3] >> 23];
  }
  for (; i < count; ++i) {
    uint32_t raw;
    std::memcpy(&raw, &values[i], sizeof raw);
    ++counts.exponent_fields[0][raw >> 23];
  }
  counts.unfolded += count;
  counts.nan_count += nan;
  counts.inf_count += inf;
  counts.zero_count += zero;
  counts.fp16_overflow += h_over;
  counts.fp16_subnormal += h_sub;
  counts.fp16_flush += h_flush;
  counts.bf16_overflow += b_over;
  counts.bf16_subnormal += b_sub;
  counts.bf16_flush += b_flush;
  counts.max_bits = max_bits;
  counts.min_nonzero_bits = min_bits;
  counts.sum += sum;
  counts.sum_squares += sum_squares;
}

/// Widens half and bfloat16 exactly (and gathers strided floats) into a float block.
template <typename Scalar>
__attribute__((always_inline)) inline const float* widen_block(const Scalar* source, int64_t stride, int64_t count,
                                                               float* buffer) {
  if constexpr (std::is_same_v<Scalar, float>) {
    if (stride == 1) return source;  // read in place
  }
  if (stride == 1) {
    for (int64_t i = 0; i < count; ++i) buffer[i] = static_cast<float>(source[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) buffer[i] = static_cast<float>(source[i * stride]);
  }
  return buffer;
}

template <typename Scalar>
__attribute__((always_inline)) inline void scan_run(const Scalar* source, int64_t stride, int64_t count,
                                                    ChunkCounts& counts) {
  alignas(64) float buffer[kBlock];
  for (int64_t done = 0; done < count;) {
    const int64_t block = std::min(kBlock, count - done);
    scan_float_block(widen_block(source + done * stride, stride, block, buffer), block, counts);
    done += block;
  }
}

/// Scans one run of `count` elements `stride` apart, widening to float where needed.
template <typename Scalar>
using RunScanner = void (*)(const Scalar*, int64_t, int64_t, ChunkCounts&);

template <typename Scalar>
void scan_run_baseline(const Scalar* source, int64_t stride, int64_t count, ChunkCounts& counts) {
  scan_run(source, stride, count, counts);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// AVX2 doubles the lanes of the classification and has F16C for half; chosen at load time, so
// the library still runs on any x86-64.
template <typename Scalar>
__attribute__((target("avx2,fma,f16c"))) void scan_run_avx2(const Scalar* source, int64_t stride, int64_t count,
                                                           ChunkCounts& counts) {
  scan_run(source, stride, count, counts);
}

// AVX-512 (still 256-bit vectors by GCC's default preference) brings 32 vector registers, which
// hold all of the classification's counters without spilling, and mask registers for the compares.
template <typename Scalar>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c"))) void scan_run_avx512(
    const Scalar* source, int64_t stride, int64_t count, ChunkCounts& counts) {
  scan_run(source, stride, count, counts);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/// MPNANNY_STATS_ISA=baseline|avx2 caps the instruction set the kernel uses: a machine with
/// AVX-512 would otherwise only ever test its AVX-512 copy (CTest runs the stat tests once per cap).
std::string stats_isa_cap() {
  const char* cap = std::getenv("MPNANNY_STATS_ISA");
  return cap ? std::string(cap) : std::string();
}
#endif

template <typename Scalar>
RunScanner<Scalar> pick_run_scanner() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  const std::string cap = stats_isa_cap();
  if (cap == "baseline") return &scan_run_baseline<Scalar>;
  if (cap != "avx2" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return &scan_run_avx512<Scalar>;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    return &scan_run_avx2<Scalar>;
  }
#endif
  return &scan_run_baseline<Scalar>;
}

template <typename Scalar>
const RunScanner<Scalar> run_scanner = pick_run_scanner<Scalar>();

/// Generic path for double: one element at a time through classify_magnitude, so that a double
/// is judged without first rounding it to float.
void scan_double_run(const double* source, int64_t stride, int64_t count, ChunkCounts& counts) {
  for (int64_t i = 0; i < count; ++i) {
    const double value = source[i * stride];
    const double magnitude = value < 0 ? -value : value;
    const ElementClass cls = classify_magnitude(magnitude);
    counts.nan_count += cls.is_nan;
    counts.inf_count += cls.is_inf;
    counts.zero_count += cls.is_zero;
    counts.fp16_overflow += cls.fp16_overflow;
    counts.fp16_subnormal += cls.fp16_subnormal;
    counts.fp16_flush += cls.fp16_flush;
    counts.bf16_overflow += cls.bf16_overflow;
    counts.bf16_subnormal += cls.bf16_subnormal;
    counts.bf16_flush += cls.bf16_flush;
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

void store(const ChunkCounts& counts, bool from_double, int64_t numel, TensorStats& stats) {
  stats.numel = numel;
  stats.nan_count = counts.nan_count;
  stats.inf_count = counts.inf_count;
  stats.zero_count = counts.zero_count;
  stats.fp16_overflow = counts.fp16_overflow;
  stats.fp16_subnormal = counts.fp16_subnormal;
  stats.fp16_flush = counts.fp16_flush;
  stats.bf16_overflow = counts.bf16_overflow;
  stats.bf16_subnormal = counts.bf16_subnormal;
  stats.bf16_flush = counts.bf16_flush;
  stats.sum = counts.sum;
  stats.sum_squares = counts.sum_squares;
  for (int b = 0; b < kHistogramBuckets; ++b) stats.histogram[b] = counts.histogram[b];
  if (from_double) {
    stats.max_abs = counts.max_abs_double;
    stats.min_abs_nonzero = counts.min_abs_nonzero_double;
  } else {
    // Zeros sit in exponent field 0 and NaNs in field 255 of the exponent count; neither is a
    // magnitude the histogram shows.
    stats.histogram[histogram_bucket_of_exponent_field(0)] -= counts.zero_count;
    stats.histogram[histogram_bucket_of_exponent_field(255)] -= counts.nan_count;
    float max_value, min_value;
    std::memcpy(&max_value, &counts.max_bits, sizeof max_value);
    std::memcpy(&min_value, &counts.min_nonzero_bits, sizeof min_value);
    stats.max_abs = max_value;
    stats.min_abs_nonzero = counts.min_nonzero_bits < kInfinityBits ? static_cast<double>(min_value)
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
    auto counts = std::make_unique<ChunkCounts>();  // 8 KiB of exponent bins: not on the stack
    int64_t index = begin;
    while (index < end) {
      const int64_t row = index / layout.row_length;
      const int64_t column = index % layout.row_length;
      const int64_t row_end = std::min({end, (row + 1) * layout.row_length, index + kFoldEvery - counts->unfolded});
      const Scalar* start = base + layout.row_offset(row) + column * layout.inner_stride;
      if constexpr (kIsDouble) {
        scan_double_run(start, layout.inner_stride, row_end - index, *counts);
      } else {
        run_scanner<Scalar>(start, layout.inner_stride, row_end - index, *counts);
        if (counts->unfolded >= kFoldEvery) counts->fold_exponent_fields();
      }
      index = row_end;
    }
    if (!kIsDouble) counts->fold_exponent_fields();
    TensorStats partial;
    store(*counts, kIsDouble, end - begin, partial);
    std::lock_guard<std::mutex> lock(merge_mutex);
    result.merge(partial);
  });
  result.numel = numel;
  return result;
}

}  // namespace

bool is_observable_tensor(const at::Tensor& tensor) noexcept {
  if (!tensor.defined()) return false;
  const auto type = tensor.scalar_type();
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

TensorStats compute_tensor_stats(const at::Tensor& tensor) noexcept {
  try {
    if (!is_observable_tensor(tensor) || tensor.numel() == 0) return {};
    // Reading a tensor must never show up as an observed op of its own.
    at::RecordFunctionGuard no_observation(false);
#ifdef MPNANNY_WITH_CUDA
    TensorStats on_device;
    if (tensor.is_cuda() && compute_tensor_stats_cuda(tensor, on_device)) return on_device;
#endif
    if (!tensor.device().is_cpu()) return compute_tensor_stats(tensor.to(at::kCPU));
    switch (tensor.scalar_type()) {
      case at::kFloat:
        return stats_of<float>(tensor);
      case at::kDouble:
        return stats_of<double>(tensor);
      case at::kHalf:
        return stats_of<c10::Half>(tensor);
      case at::kBFloat16:
        return stats_of<c10::BFloat16>(tensor);
      default:
        return {};
    }
  } catch (...) {
    return {};
  }
}

}  // namespace mpnanny
