// One-pass statistics of a tensor, judged against the fp16 and bf16 formats.
#ifndef MPNANNY_TENSORSTATS_H
#define MPNANNY_TENSORSTATS_H

#include <array>
#include <cstdint>
#include <limits>

#include "mpnanny/ElementClass.h"

namespace at {
class Tensor;
}

namespace mpnanny {

/// What one read of a tensor's memory yields. Sums are accumulated in float within blocks of
/// 2048 elements (at most 32 terms per lane, relative error below 2e-6) and in double across
/// blocks; blocks holding magnitudes outside [2^-60, 2^60) are summed in double. `max_abs`,
/// `min_abs_nonzero`, `sum` and `sum_squares` cover finite elements only (NaN and Inf are counted
/// instead), so one bad element does not hide the shape of the rest.
/// The class counts (NaN, Inf, zero, and fp16's and bf16's overflow, subnormal and flush) come
/// from ClassCounts, `max_abs`, `min_abs_nonzero`, `sum` and `sum_squares` from FiniteSummary.
struct TensorStats : ClassCounts<int64_t>, FiniteSummary {
  int64_t numel = 0;
  std::array<int64_t, kHistogramBuckets> histogram{};

  int64_t finite_count() const { return numel - nan_count - inf_count; }
  int64_t finite_nonzero_count() const { return finite_count() - zero_count; }
  double mean() const;
  /// L2 norm of the finite elements.
  double norm() const;
  /// Folds another partial result (a chunk of the same tensor) into this one.
  void merge(const TensorStats& other);
};

/// Computes the statistics in one parallel pass (at::parallel_for) over float, double, half and
/// bfloat16 tensors, contiguous or strided. A complex tensor is read as its real and imaginary
/// parts (twice its numel), a sparse COO tensor as its coalesced stored values (numel: their
/// count). Other dtypes (integers, bool) and layouts, and undefined tensors, return an empty
/// result (numel 0). CUDA tensors go to runtime/cuda/'s kernel where it is built, and are copied
/// to the host otherwise. Never throws: an unexpected error yields an empty result.
TensorStats compute_tensor_stats(const at::Tensor& tensor) noexcept;

/// ||a - b||_2 (in double) of two tensors of one shape, such as a weight before and after an
/// optimizer step: one pass and no temporary for contiguous CPU tensors of one floating dtype,
/// ATen's dist otherwise. Never throws: NaN when the tensors cannot be compared.
double l2_distance(const at::Tensor& a, const at::Tensor& b) noexcept;

/// The copy of the CPU kernel this machine runs: "avx512-transpose" (AVX-512 with VBMI, BITALG
/// and GFNI), "avx512", "avx2" or "baseline" (SSE2, NEON or other). MPNANNY_STATS_ISA=baseline,
/// avx2 or avx512 caps it, read once at load time.
const char* stat_kernel_copy() noexcept;

/// True for the dtypes compute_tensor_stats reads.
bool is_observable_tensor(const at::Tensor& tensor) noexcept;

}  // namespace mpnanny

#endif  // MPNANNY_TENSORSTATS_H
