#include "mpnanny/TensorStats.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

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

// Elements are widened into a small block first; the arithmetic loop over the block has no
// data-dependent branches, which lets the compiler vectorize it, and the histogram scatter runs
// as a second short loop over bucket indices that are already in L1.
constexpr int64_t kBlock = 512;

template <typename Real>
struct BlockAccumulator {
  int64_t nan_count = 0, inf_count = 0, zero_count = 0;
  int64_t fp16_overflow = 0, fp16_subnormal = 0, fp16_flush = 0;
  int64_t bf16_overflow = 0, bf16_subnormal = 0, bf16_flush = 0;
  Real max_abs = 0;
  Real min_abs_nonzero = LargestFinite<Real>::value;
  bool saw_nonzero = false;
  double sum = 0, sum_squares = 0;
  int64_t histogram[kHistogramBuckets] = {};

  void add_block(const Real* values, int64_t count) {
    int8_t buckets[kBlock];
    // Counters local to the block stay in registers and are summed as small integers.
    int32_t nan = 0, inf = 0, zero = 0, h_over = 0, h_sub = 0, h_flush = 0, b_over = 0, b_sub = 0,
            b_flush = 0;
    Real block_max = max_abs, block_min = min_abs_nonzero;
    double block_sum = 0, block_sq = 0;
    for (int64_t i = 0; i < count; ++i) {
      const Real value = values[i];
      const Real magnitude = value < 0 ? -value : value;
      const ElementClass cls = classify_magnitude(magnitude);
      nan += cls.is_nan;
      inf += cls.is_inf;
      zero += cls.is_zero;
      h_over += cls.fp16_overflow;
      h_sub += cls.fp16_subnormal;
      h_flush += cls.fp16_flush;
      b_over += cls.bf16_overflow;
      b_sub += cls.bf16_subnormal;
      b_flush += cls.bf16_flush;
      const bool finite = !cls.is_nan && !cls.is_inf;
      const Real finite_value = finite ? value : Real(0);
      const Real finite_magnitude = finite ? magnitude : Real(0);
      block_max = finite_magnitude > block_max ? finite_magnitude : block_max;
      const Real nonzero_magnitude = (finite && !cls.is_zero) ? magnitude : LargestFinite<Real>::value;
      block_min = nonzero_magnitude < block_min ? nonzero_magnitude : block_min;
      block_sum += static_cast<double>(finite_value);
      block_sq += static_cast<double>(finite_value) * static_cast<double>(finite_value);
      buckets[i] = cls.bucket;
    }
    for (int64_t i = 0; i < count; ++i) {
      if (buckets[i] >= 0) ++histogram[buckets[i]];
    }
    nan_count += nan;
    inf_count += inf;
    zero_count += zero;
    fp16_overflow += h_over;
    fp16_subnormal += h_sub;
    fp16_flush += h_flush;
    bf16_overflow += b_over;
    bf16_subnormal += b_sub;
    bf16_flush += b_flush;
    max_abs = block_max;
    // The largest finite value doubles as "none seen"; a real element of exactly that magnitude
    // is told apart by the finite non-zero count.
    min_abs_nonzero = block_min;
    sum += block_sum;
    sum_squares += block_sq;
  }

  void store_into(TensorStats& stats, int64_t numel) const {
    stats.numel = numel;
    stats.nan_count = nan_count;
    stats.inf_count = inf_count;
    stats.zero_count = zero_count;
    stats.max_abs = static_cast<double>(max_abs);
    stats.fp16_overflow = fp16_overflow;
    stats.fp16_subnormal = fp16_subnormal;
    stats.fp16_flush = fp16_flush;
    stats.bf16_overflow = bf16_overflow;
    stats.bf16_subnormal = bf16_subnormal;
    stats.bf16_flush = bf16_flush;
    stats.sum = sum;
    stats.sum_squares = sum_squares;
    for (int b = 0; b < kHistogramBuckets; ++b) stats.histogram[b] = histogram[b];
    stats.min_abs_nonzero = stats.finite_nonzero_count() > 0 ? static_cast<double>(min_abs_nonzero)
                                                             : std::numeric_limits<double>::infinity();
  }
};

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
    BlockAccumulator<Real> accumulator;
    Real widened[kBlock];
    int64_t index = begin;
    while (index < end) {
      const int64_t row = index / layout.row_length;
      const int64_t column = index % layout.row_length;
      const int64_t row_end = std::min(end, (row + 1) * layout.row_length);
      const Scalar* row_base = base + layout.row_offset(row);
      for (int64_t col = column; col < column + (row_end - index);) {
        const int64_t count = std::min<int64_t>(kBlock, column + (row_end - index) - col);
        if (layout.inner_stride == 1) {
          for (int64_t i = 0; i < count; ++i) widened[i] = static_cast<Real>(row_base[col + i]);
        } else {
          for (int64_t i = 0; i < count; ++i) widened[i] = static_cast<Real>(row_base[(col + i) * layout.inner_stride]);
        }
        accumulator.add_block(widened, count);
        col += count;
      }
      index = row_end;
    }
    TensorStats partial;
    accumulator.store_into(partial, end - begin);
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
