// Classification of one floating-point element against the fp16 and bf16 formats.
//
// This header is the single definition shared by the CPU stat kernel (runtime/src/StatKernelCpu*)
// and the CUDA kernel (runtime/cuda/): both must agree bit for bit on every count, so everything
// here is branch-light integer/float arithmetic with no library calls that differ between host
// and device. Keep it free of C++ standard library dependencies that nvcc cannot compile.
#ifndef MPNANNY_ELEMENTCLASS_H
#define MPNANNY_ELEMENTCLASS_H

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define MPNANNY_HD __host__ __device__
#else
#define MPNANNY_HD
#endif

namespace mpnanny {

/// Extremes and sums of a tensor's finite elements, in double: the part of a pass's result beside
/// its class counts (ClassCounts below), the same on the host and the device.
struct FiniteSummary {
  double max_abs = 0.0;
  double min_abs_nonzero = __builtin_huge_val();  ///< +inf when there is no finite non-zero element
  double sum = 0.0;
  double sum_squares = 0.0;

  /// Folds in the summary of other elements (another chunk, thread or block).
  MPNANNY_HD void merge_summary(const FiniteSummary& other) {
    max_abs = other.max_abs > max_abs ? other.max_abs : max_abs;
    min_abs_nonzero = other.min_abs_nonzero < min_abs_nonzero ? other.min_abs_nonzero : min_abs_nonzero;
    sum += other.sum;
    sum_squares += other.sum_squares;
  }
};

/// Limits of the low-precision formats a run is judged against (derived from IEEE 754, see
/// KNOWLEDGE.md "Format limits"). "Flush" is the magnitude at or below which a value rounds to zero.
struct FormatLimits {
  double max_finite;
  double min_normal;
  double flush_at_or_below;
  int mantissa_bits;
};

constexpr FormatLimits kFp16Limits{65504.0, 6.103515625e-05 /*2^-14*/, 2.98023223876953125e-08 /*2^-25*/, 10};
constexpr FormatLimits kBf16Limits{3.3895313892515355e+38, 1.1754943508222875e-38 /*2^-126*/,
                                   4.591774807899561e-41 /*2^-134*/, 7};

/// log2|x| histogram: bucket 0 holds non-zero magnitudes below 2^kHistogramMinExponent (values
/// fp16 cannot even store as a subnormal), buckets 1..kHistogramBuckets-2 hold one binade each,
/// [2^e, 2^(e+1)) with e = kHistogramMinExponent + bucket - 1, and the last bucket holds 2^16 and
/// above, infinities included. Zeros and NaNs are counted elsewhere. The range is fp16's, because
/// that is the format whose range a training run most often exceeds.
constexpr int kHistogramMinExponent = -24;
constexpr int kHistogramBuckets = 42;

/// The binade a histogram bucket starts at, for bucket >= 1.
MPNANNY_HD constexpr int histogram_bucket_exponent(int bucket) { return kHistogramMinExponent + bucket - 1; }

MPNANNY_HD inline uint32_t float_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

/// Histogram bucket of a non-zero, non-NaN float from its biased exponent field (bits 23..30):
/// fp32 subnormals (field 0) are far below 2^-24 and infinities (field 255) above 2^16, so the
/// clamp puts both where they belong. The CPU kernel counts exponent fields and folds them into
/// buckets with this; the per-element paths call it through histogram_bucket.
MPNANNY_HD constexpr int histogram_bucket_of_exponent_field(int biased_exponent) {
  const int bucket = biased_exponent - 127 - kHistogramMinExponent + 1;
  return bucket < 0 ? 0 : (bucket > kHistogramBuckets - 1 ? kHistogramBuckets - 1 : bucket);
}

/// Histogram bucket of a finite or infinite non-zero magnitude given as float. Computed from the
/// exponent bits so that it vectorizes on the CPU and matches the device exactly.
MPNANNY_HD inline int histogram_bucket(float magnitude) {
  return histogram_bucket_of_exponent_field(static_cast<int>((float_bits(magnitude) >> 23) & 0xffu));
}

/// The classes a value falls in, as 0 or 1 each, in an integer type of the caller's choice: the
/// CPU kernel sums them in int32 vector lanes, the device and the per-element form in uint32.
template <typename Flag>
struct MagnitudeFlags {
  Flag is_nan, is_inf, is_zero;
  Flag fp16_overflow;   ///< finite and above 65504
  Flag fp16_subnormal;  ///< would be stored as an fp16 subnormal (precision lost)
  Flag fp16_flush;      ///< non-zero but rounds to zero in fp16
  Flag bf16_overflow, bf16_subnormal, bf16_flush;
};

/// One element's classification, as 0/1 flags so that kernels can sum them without branches.
struct ElementClass : MagnitudeFlags<uint8_t> {
  int8_t bucket;  ///< histogram bucket, -1 for zero and NaN
};

#if defined(__CUDACC__)
// The visitor may be a device lambda; host instantiations never get one.
#pragma nv_exec_check_disable
#endif
/// Calls visit(a's count, b's count) for each class, in one order: the one list of the classes
/// that copying, merging and reducing counts go through.
template <typename A, typename B, typename Visit>
MPNANNY_HD inline void for_each_class(A& a, B& b, Visit visit) {
  visit(a.nan_count, b.nan_count);
  visit(a.inf_count, b.inf_count);
  visit(a.zero_count, b.zero_count);
  visit(a.fp16_overflow, b.fp16_overflow);
  visit(a.fp16_subnormal, b.fp16_subnormal);
  visit(a.fp16_flush, b.fp16_flush);
  visit(a.bf16_overflow, b.bf16_overflow);
  visit(a.bf16_subnormal, b.bf16_subnormal);
  visit(a.bf16_flush, b.bf16_flush);
}

/// How many elements fell in each class. Every form a pass's result takes counts them through
/// this (TensorStats, the CPU kernel's chunk, the device's per-thread, per-block and final
/// results), so that a class is added in one place and every copy and merge carries it.
template <typename Count>
struct ClassCounts {
  Count nan_count = 0, inf_count = 0, zero_count = 0;
  Count fp16_overflow = 0, fp16_subnormal = 0, fp16_flush = 0;
  Count bf16_overflow = 0, bf16_subnormal = 0, bf16_flush = 0;

  /// Counts one element's flags, or a loop's sums of them.
  template <typename Flag>
  MPNANNY_HD void count_flags(const MagnitudeFlags<Flag>& flags) {
    nan_count += flags.is_nan;
    inf_count += flags.is_inf;
    zero_count += flags.is_zero;
    fp16_overflow += flags.fp16_overflow;
    fp16_subnormal += flags.fp16_subnormal;
    fp16_flush += flags.fp16_flush;
    bf16_overflow += flags.bf16_overflow;
    bf16_subnormal += flags.bf16_subnormal;
    bf16_flush += flags.bf16_flush;
  }
  template <typename Other>
  MPNANNY_HD void add_counts(const ClassCounts<Other>& other) {
    for_each_class(*this, other, [](Count& mine, Other theirs) { mine += static_cast<Count>(theirs); });
  }
  template <typename Other>
  MPNANNY_HD void assign_counts(const ClassCounts<Other>& other) {
    for_each_class(*this, other, [](Count& mine, Other theirs) { mine = static_cast<Count>(theirs); });
  }
};

template <typename Real>
struct LargestFinite;
template <>
struct LargestFinite<float> {
  static constexpr float value = 3.40282346638528859812e+38F;
};
template <>
struct LargestFinite<double> {
  static constexpr double value = 1.79769313486231570815e+308;
};

/// Classifies a magnitude |x| (already made non-negative; NaN stays NaN). Works on float and
/// double so that a double tensor is judged without first rounding it to float.
template <typename Real>
MPNANNY_HD inline ElementClass classify_magnitude(Real magnitude) {
  ElementClass result{};
  const bool is_nan = !(magnitude == magnitude);
  const bool is_inf = !is_nan && magnitude > LargestFinite<Real>::value;
  const bool is_zero = magnitude == static_cast<Real>(0);
  const bool finite_nonzero = !is_nan && !is_inf && !is_zero;
  result.is_nan = is_nan;
  result.is_inf = is_inf;
  result.is_zero = is_zero;
  result.fp16_overflow = finite_nonzero && magnitude > static_cast<Real>(kFp16Limits.max_finite);
  result.fp16_subnormal = finite_nonzero && magnitude < static_cast<Real>(kFp16Limits.min_normal) &&
                          magnitude > static_cast<Real>(kFp16Limits.flush_at_or_below);
  result.fp16_flush = finite_nonzero && magnitude <= static_cast<Real>(kFp16Limits.flush_at_or_below);
  result.bf16_overflow = finite_nonzero && magnitude > static_cast<Real>(kBf16Limits.max_finite);
  result.bf16_subnormal = finite_nonzero && magnitude < static_cast<Real>(kBf16Limits.min_normal) &&
                          magnitude > static_cast<Real>(kBf16Limits.flush_at_or_below);
  result.bf16_flush = finite_nonzero && magnitude <= static_cast<Real>(kBf16Limits.flush_at_or_below);
  if (is_nan || is_zero) {
    result.bucket = -1;
  } else {
    // A double too small for float becomes 0.0f: it still belongs in the lowest bucket.
    const float as_float = static_cast<float>(magnitude);
    result.bucket = static_cast<int8_t>(as_float == 0.0f ? 0 : histogram_bucket(as_float));
  }
  return result;
}

/// Bit patterns of the limits as non-negative floats: for non-negative IEEE floats, ordering
/// of the bit patterns as integers is the ordering of the values, so the whole classification of
/// a float runs on integer compares, which vectorize on the CPU and match the device exactly.
struct Fp32Thresholds {
  static constexpr uint32_t kInfinity = 0x7f800000u;
  static constexpr uint32_t kFp16Max = 0x477fe000u;             // 65504
  static constexpr uint32_t kFp16MinNormal = 0x38800000u;       // 2^-14
  static constexpr uint32_t kFp16FlushAtOrBelow = 0x33000000u;  // 2^-25
  static constexpr uint32_t kBf16Max = 0x7f7f0000u;             // 3.3895e38
  static constexpr uint32_t kBf16MinNormal = 0x00800000u;       // 2^-126
  static constexpr uint32_t kBf16FlushAtOrBelow = 0x00008000u;  // 2^-134, an fp32 subnormal
};

/// The classification of a float from the bits of its magnitude (sign bit cleared), as integer
/// compares. Lane is the integer type the bits are held in: uint32_t, or int32_t where signed
/// compares are cheaper (x86 vector units have no unsigned compare; the bits of a magnitude fit
/// in 31 bits, so both orders agree). Bitwise & on 0/1 values rather than &&: no short-circuit
/// branches, so loops over it vectorize.
template <typename Lane>
MPNANNY_HD inline MagnitudeFlags<Lane> classify_magnitude_lane(Lane bits) {
  using T = Fp32Thresholds;
  const Lane finite = bits < static_cast<Lane>(T::kInfinity);
  const Lane nonzero = bits != Lane{0};
  MagnitudeFlags<Lane> flags;
  flags.is_nan = bits > static_cast<Lane>(T::kInfinity);
  flags.is_inf = bits == static_cast<Lane>(T::kInfinity);
  flags.is_zero = nonzero ^ Lane { 1 };
  flags.fp16_overflow = finite & Lane(bits > static_cast<Lane>(T::kFp16Max));
  flags.fp16_subnormal =
      Lane(bits < static_cast<Lane>(T::kFp16MinNormal)) & Lane(bits > static_cast<Lane>(T::kFp16FlushAtOrBelow));
  flags.fp16_flush = nonzero & Lane(bits <= static_cast<Lane>(T::kFp16FlushAtOrBelow));
  flags.bf16_overflow = finite & Lane(bits > static_cast<Lane>(T::kBf16Max));
  flags.bf16_subnormal =
      Lane(bits < static_cast<Lane>(T::kBf16MinNormal)) & Lane(bits > static_cast<Lane>(T::kBf16FlushAtOrBelow));
  flags.bf16_flush = nonzero & Lane(bits <= static_cast<Lane>(T::kBf16FlushAtOrBelow));
  return flags;
}

/// The classification of a float from the bits of its magnitude (sign bit cleared). Same result
/// as classify_magnitude(float); this is the per-element form the device kernel uses.
MPNANNY_HD inline ElementClass classify_magnitude_bits(uint32_t bits) {
  const MagnitudeFlags<uint32_t> flags = classify_magnitude_lane(bits);
  ElementClass result{};
  result.is_nan = static_cast<uint8_t>(flags.is_nan);
  result.is_inf = static_cast<uint8_t>(flags.is_inf);
  result.is_zero = static_cast<uint8_t>(flags.is_zero);
  result.fp16_overflow = static_cast<uint8_t>(flags.fp16_overflow);
  result.fp16_subnormal = static_cast<uint8_t>(flags.fp16_subnormal);
  result.fp16_flush = static_cast<uint8_t>(flags.fp16_flush);
  result.bf16_overflow = static_cast<uint8_t>(flags.bf16_overflow);
  result.bf16_subnormal = static_cast<uint8_t>(flags.bf16_subnormal);
  result.bf16_flush = static_cast<uint8_t>(flags.bf16_flush);
  const int bucket = histogram_bucket_of_exponent_field(static_cast<int>(bits >> 23));
  result.bucket = static_cast<int8_t>((flags.is_nan | flags.is_zero) ? -1 : bucket);
  return result;
}

/// Unit in the last place of |value| in a format with `mantissa_bits` explicit mantissa bits,
/// as a power-of-two exponent: ulp = 2^result. Used by the swamping rule.
MPNANNY_HD inline int ulp_exponent(float magnitude, int mantissa_bits) {
  const int biased_exponent = static_cast<int>((float_bits(magnitude) >> 23) & 0xffu);
  return biased_exponent - 127 - mantissa_bits;
}

}  // namespace mpnanny

#endif  // MPNANNY_ELEMENTCLASS_H
