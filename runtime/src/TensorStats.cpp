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
#include <cstring>
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

// Elements are widened into a small block first; the loop over the block has no data-dependent
// branches (float classification is integer compares on the magnitude's bits, see
// ElementClass.h), so the compiler vectorizes it, and the histogram scatter runs as a second short
// loop over bucket bytes already in L1, spread over four sub-histograms to break the dependency
// between equal buckets. target_clones builds an AVX2 copy chosen at load time.
constexpr int64_t kBlock = 1024;

struct BlockCounts {
  int64_t nan_count = 0, inf_count = 0, zero_count = 0;
  int64_t fp16_overflow = 0, fp16_subnormal = 0, fp16_flush = 0;
  int64_t bf16_overflow = 0, bf16_subnormal = 0, bf16_flush = 0;
  double sum = 0, sum_squares = 0;
  uint32_t max_bits = 0;
  uint32_t min_nonzero_bits = Fp32Thresholds::kInfinity;
  double max_abs_double = 0;  // double tensors only
  double min_abs_nonzero_double = std::numeric_limits<double>::infinity();
  uint32_t histogram[4][kHistogramBuckets] = {};
  uint8_t buckets[kBlock];  // scratch: one block's bucket indices
  int64_t uncounted_in_bucket0 = 0;  // zeros and NaNs the branch-free loop put in bucket 0
};

// Inlined into a baseline and an AVX2 wrapper; the AVX2 one is picked at run time.
__attribute__((always_inline)) inline void float_block_loop(const float* values, int64_t count,
                                                            BlockCounts& counts) {
  uint8_t* buckets = counts.buckets;
  int32_t nan = 0, inf = 0, zero = 0, h_over = 0, h_sub = 0, h_flush = 0, b_over = 0, b_sub = 0, b_flush = 0;
  uint32_t max_bits = counts.max_bits, min_bits = counts.min_nonzero_bits;
  // The sum of a block (at most kBlock elements) is accumulated in float and added to a double
  // total per block; squares go straight to double, where 1e38^2 still fits. The reductions are
  // reassociated across vector lanes (the pragma, honoured with -fopenmp-simd).
  float sum = 0;
  double sum_squares = 0;
#pragma omp simd reduction(+ : nan, inf, zero, h_over, h_sub, h_flush, b_over, b_sub, b_flush, sum, sum_squares) \
    reduction(max : max_bits) reduction(min : min_bits)
  for (int64_t i = 0; i < count; ++i) {
    uint32_t raw;
    std::memcpy(&raw, &values[i], sizeof raw);
    const uint32_t bits = raw & 0x7fffffffu;
    const ElementClass cls = classify_magnitude_bits(bits);
    nan += cls.is_nan;
    inf += cls.is_inf;
    zero += cls.is_zero;
    h_over += cls.fp16_overflow;
    h_sub += cls.fp16_subnormal;
    h_flush += cls.fp16_flush;
    b_over += cls.bf16_overflow;
    b_sub += cls.bf16_subnormal;
    b_flush += cls.bf16_flush;
    const uint32_t finite = bits < Fp32Thresholds::kInfinity;
    const uint32_t finite_bits = finite ? bits : 0u;
    max_bits = finite_bits > max_bits ? finite_bits : max_bits;
    const uint32_t nonzero_bits = (finite & (bits != 0u)) ? bits : Fp32Thresholds::kInfinity;
    min_bits = nonzero_bits < min_bits ? nonzero_bits : min_bits;
    // Select in float, then widen: a 32-bit mask selecting 32-bit lanes keeps the loop vectorizable.
    const float loaded = values[i];  // loaded unconditionally: a conditional load is control flow
    const float finite_value = finite ? loaded : 0.0f;
    sum += finite_value;
    sum_squares += static_cast<double>(finite_value) * finite_value;
    buckets[i] = static_cast<uint8_t>(cls.bucket);  // -1 becomes 255: skipped below
  }
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    ++counts.histogram[0][buckets[i] < kHistogramBuckets ? buckets[i] : 0] ;
    ++counts.histogram[1][buckets[i + 1] < kHistogramBuckets ? buckets[i + 1] : 0];
    ++counts.histogram[2][buckets[i + 2] < kHistogramBuckets ? buckets[i + 2] : 0];
    ++counts.histogram[3][buckets[i + 3] < kHistogramBuckets ? buckets[i + 3] : 0];
  }
  for (; i < count; ++i) ++counts.histogram[0][buckets[i] < kHistogramBuckets ? buckets[i] : 0];
  // Zeros and NaNs were counted into bucket 0 above to keep the loop branch-free; take them out.
  counts.uncounted_in_bucket0 += nan + zero;
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

void add_float_block_baseline(const float* values, int64_t count, BlockCounts& counts) {
  float_block_loop(values, count, counts);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void add_float_block_avx2(const float* values, int64_t count, BlockCounts& counts) {
  float_block_loop(values, count, counts);
}
#endif

using FloatBlockFunction = void (*)(const float*, int64_t, BlockCounts&);

FloatBlockFunction pick_float_block() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) return &add_float_block_avx2;
#endif
  return &add_float_block_baseline;
}

const FloatBlockFunction add_float_block = pick_float_block();

void add_double_block(const double* values, int64_t count, BlockCounts& counts) {
  for (int64_t i = 0; i < count; ++i) {
    const double value = values[i];
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
      if (cls.is_inf) ++counts.histogram[0][kHistogramBuckets - 1];
      continue;
    }
    if (!cls.is_zero) {
      counts.max_abs_double = std::max(counts.max_abs_double, magnitude);
      counts.min_abs_nonzero_double = std::min(counts.min_abs_nonzero_double, magnitude);
      ++counts.histogram[0][cls.bucket];
    }
    counts.sum += value;
    counts.sum_squares += value * value;
  }
}

void store(const BlockCounts& counts, bool from_double, int64_t numel, TensorStats& stats) {
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
  for (int b = 0; b < kHistogramBuckets; ++b) {
    stats.histogram[b] = static_cast<int64_t>(counts.histogram[0][b]) + counts.histogram[1][b] +
                         counts.histogram[2][b] + counts.histogram[3][b];
  }
  stats.histogram[0] -= counts.uncounted_in_bucket0;
  if (from_double) {
    stats.max_abs = counts.max_abs_double;
    stats.min_abs_nonzero = counts.min_abs_nonzero_double;
  } else {
    float max_value, min_value;
    std::memcpy(&max_value, &counts.max_bits, sizeof max_value);
    std::memcpy(&min_value, &counts.min_nonzero_bits, sizeof min_value);
    stats.max_abs = max_value;
    stats.min_abs_nonzero = counts.min_nonzero_bits < Fp32Thresholds::kInfinity
                                ? static_cast<double>(min_value)
                                : std::numeric_limits<double>::infinity();
  }
}

// Half and bfloat16 are widened to float (exact), float stays float, double stays double.
template <typename Scalar>
struct WideType {
  using type = float;
};
template <>
struct WideType<double> {
  using type = double;
};

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
  // Merge adjacent dimensions that are contiguous with each other, so that a transposed or
  // sliced tensor is walked in as few, as long rows as possible.
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (tensor.size(d) == 1) continue;
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
  using Real = typename WideType<Scalar>::type;
  const Scalar* base = tensor.data_ptr<Scalar>();
  const int64_t numel = tensor.numel();
  const RowLayout layout = make_row_layout(tensor);
  const int64_t total = layout.row_count * layout.row_length;

  TensorStats result;
  std::mutex merge_mutex;
  // Work is split over the flat element index so that one long row and many short rows both
  // parallelize; each task walks its own slice of rows.
  constexpr int64_t kGrain = 1 << 15;
  at::parallel_for(0, total, kGrain, [&](int64_t begin, int64_t end) {
    // uint32 sub-histograms hold a chunk's counts: chunks are far below 2^32 elements.
    BlockCounts counts;
    Real widened[kBlock];
    int64_t index = begin;
    while (index < end) {
      const int64_t row = index / layout.row_length;
      const int64_t column = index % layout.row_length;
      const int64_t row_end = std::min(end, (row + 1) * layout.row_length);
      const Scalar* row_base = base + layout.row_offset(row);
      for (int64_t col = column; col < column + (row_end - index);) {
        const int64_t count = std::min<int64_t>(kBlock, column + (row_end - index) - col);
        const Real* block = widened;
        if constexpr (std::is_same_v<Scalar, Real>) {
          if (layout.inner_stride == 1) block = row_base + col;  // contiguous: read in place
        }
        if (block == widened) {
          if (layout.inner_stride == 1) {
            for (int64_t i = 0; i < count; ++i) widened[i] = static_cast<Real>(row_base[col + i]);
          } else {
            for (int64_t i = 0; i < count; ++i) widened[i] = static_cast<Real>(row_base[(col + i) * layout.inner_stride]);
          }
        }
        if constexpr (std::is_same_v<Real, double>) {
          add_double_block(block, count, counts);
        } else {
          add_float_block(block, count, counts);
        }
        col += count;
      }
      index = row_end;
    }
    TensorStats partial;
    store(counts, std::is_same_v<Real, double>, end - begin, partial);
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
