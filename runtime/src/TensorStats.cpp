#include "mpnanny/TensorStats.h"

#include "MaskedFpExceptions.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/record_function.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef MPNANNY_WITH_CUDA
#include "CudaStats.h"
#endif

// The stat kernel's x86 copies (AVX2, AVX-512, transposing AVX-512) are built with GCC's target
// attributes; other compilers and CPUs get the baseline copy only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MPNANNY_X86_COPIES 1
#include <immintrin.h>
#endif

// at::parallel_for is a `#pragma omp parallel` inline in LibTorch's headers when LibTorch uses
// OpenMP: compiled without OpenMP it silently runs on one thread (runtime/CMakeLists.txt).
#if AT_PARALLEL_OPENMP && !defined(_OPENMP)
#error "TensorStats.cpp must be compiled with OpenMP, or at::parallel_for runs serially"
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

// Float and bfloat16 are read in place, in blocks of kBlock elements; half, and rows whose
// elements are not adjacent, are first widened (exactly) into a float block.
//
// Fast path (scan_ordinary_block): a block whose magnitudes are all zero or in [2^-60, 2^60) --
// no NaN, no Inf, no fp32 subnormal; nearly every block of a training run -- is read with GCC
// vector extensions, in vectors of the width of the copy it is inlined into (VectorTypes), doing
// as little per element as possible:
//   - no compare for the fp16 limits: they fall inside binades, and a second read of the block
//     counts the elements beyond them only where its fields reach them (above fp16's max; at or
//     below 2^-24, where fp16's flush limit 2^-25 lies);
//   - no max or min of the values either: the block's largest and smallest exponent fields (from
//     the field bytes below) tell which blocks may hold the chunk's largest or smallest non-zero
//     magnitude, and only those are read again, in L1, for the exact value (exact_extremes): for
//     values drawn from one distribution, the first few blocks and then the few that hold the
//     rare extremes. Blocks with zeros would be read again too, to rule out fp32 subnormals
//     (field 0, like zeros), but on x86 the denormal-operand flag tells (DenormalOperandFlag);
//   - sum and sum of squares in float, 64 accumulator lanes (element i of a block goes to the
//     same lane whatever the vector width: load_quad) so that each lane adds at most 32 values
//     per block;
//     the block's lanes are then added in double, four into each of 16 lanes the chunk keeps
//     (in vectors, not one by one), and those in one order at its end. The squares are added
//     with FMA where the CPU has it (add_square). Every copy with FMA (AVX2, AVX-512) thus
//     rounds alike; the baseline copy rounds each square before adding it.
//     The range bounds keep every square a normal float and every lane's sum far below float's
//     max, so the relative error stays below 2e-6;
//   - each element's exponent field (0 for zero and fp32 subnormals, which a second read tells
//     apart), stored as a byte (by VBMI's multishift where the CPU has it: four operations for
//     64 fields, store_fields_multishift); the block's bytes, still in L1, are then counted from
//     the field of the block's smallest non-zero magnitude to that of its largest: a dozen or so
//     fields for a block of trained weights or activations. Zeros are the elements left over. Two ways
//     to count:
//       * byte transposition, where the CPU has AVX512-VBMI, BITALG and GFNI (Ice Lake, Zen 4
//         and later): a table lookup turns each byte into a one-hot bit for its place in a
//         window of 8 fields, a GF(2) affine transform transposes each 8x8 bit block so that
//         byte k gathers bit k of 8 elements, and a byte popcount adds them: four operations
//         count 8 fields for 64 elements (count_fields_by_transposition). One window of 16
//         fields is counted in the loop itself, as the bytes are made (count_window_step_rotated):
//         the window the block before needed, with a field to spare above it. The fields it missed
//         (the block's rare smallest magnitudes, mostly) are counted after the loop, one by
//         one where they are few (count_fields_outside_window), by windows where they are not;
//       * otherwise, in the AVX2 and AVX-512 copies, byte shuffles: each byte becomes its place
//         in a window of 8 or 16 fields, and a shuffle per pair of places adds 1 or 16 to a byte
//         of two nibble counts: one operation per field for a vector of bytes
//         (count_fields_by_nibbles; 3 to 7 % faster than compares in the AVX2 copy, 10 to 19 %
//         in the AVX-512 one);
//       * in the baseline copy, vector compares, one field at a time (in groups of kFieldGroup):
//         two operations per field for a vector of bytes (count_field_group).
//     A scalar increment per element (or per pair of elements) costs more than any of these.
// The fast path's other counts follow from the fields (finish_float_counts): zeros are the
// elements no field counted, values at or above fp16's smallest normal (2^-14) have fields 113
// and up, and bf16, NaN and Inf counts are 0.
//
// Any other block is read again by the general path (scan_general_block): every element through
// ElementClass.h's classify_magnitude_lane, sums in double, no data-dependent branch, exponent
// fields counted one by one.
constexpr int64_t kBlock = 2048;
/// Elements per iteration of the fast path: its accumulator lanes, and the field bytes gathered
/// at once.
constexpr int64_t kStep = 64;
/// The chunk's double lanes for the fast path's sums: each gains four of a block's float lanes.
constexpr int kChunkLanes = kStep / 4;
constexpr int64_t kFoldEvery = int64_t{1} << 30;  // the general path's uint32 field bins cannot overflow
constexpr int32_t kInfinityBits = static_cast<int32_t>(Fp32Thresholds::kInfinity);
constexpr int32_t kOrdinaryMaxBits = 0x5d800000;  // 2^60: exclusive bound of the fast path
constexpr int32_t kOrdinaryMinBits = 0x21800000;  // 2^-60: inclusive bound for non-zero values

constexpr int kFieldCopies = 4;
constexpr int kFields = 256;
/// Fields counted together by compares, and by byte transposition (two windows of 8). The last
/// group or window may run past the block's largest field (the extra places count nothing), and
/// still stays inside the field totals: the fast path's fields are below 2^60's.
constexpr int kFieldGroup = 8;
constexpr int kFieldWindow = 16;
static_assert((kOrdinaryMaxBits >> 23) - 1 + kFieldWindow <= kFields, "a window past the largest field");
/// The exponent field of fp16's smallest normal, 2^-14.
constexpr int kFp16NormalField = 127 - 14;

/// GCC vector types of kWidth bytes: 64 in the AVX-512 copies, 32 in the AVX2 copy, 16 in the
/// baseline copy (SSE2, or NEON on ARM). Each copy works in its machine's width: GCC lowers the
/// compares and selects of wider vectors element by element, in scalar code, which made the AVX2
/// and baseline copies forty times slower than the AVX-512 one.
template <int kWidth>
struct VectorTypes {
  typedef float Float __attribute__((vector_size(kWidth)));
  typedef int32_t Int __attribute__((vector_size(kWidth)));
  typedef uint32_t Uint __attribute__((vector_size(kWidth)));
  typedef uint8_t Byte __attribute__((vector_size(kWidth)));
  typedef uint64_t Word __attribute__((vector_size(kWidth)));
  static constexpr int kLanes = kWidth / 4;  // float or int32 lanes
  static constexpr int kVectorsPerStep = kStep / kLanes;
};

/// Fills quad[k] with float vector 4 * q + k of the fast path's step of kStep elements at `step`.
/// The step's 64 float lanes are the same whatever the vector width, so that every copy adds the
/// same values into the same accumulator lanes:
///   - float: element i is lane i;
///   - bfloat16, read as it is (no widened copy of the block): a dword holds two elements, whose
///     floats are its bits shifted up 16 (the even one) and masked to the upper 16 (the odd
///     one), one operation each. Of each half of the step (32 elements), the even elements are
///     its lanes 0..15 and the odd ones its lanes 16..31.
template <int kWidth, typename Scalar>
__attribute__((always_inline)) inline void load_quad(const Scalar* step, int q,
                                                     typename VectorTypes<kWidth>::Float (&quad)[4]) {
  using V = VectorTypes<kWidth>;
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const int first_lane = (4 * q + k) * V::kLanes;
    if constexpr (std::is_same_v<Scalar, float>) {
      std::memcpy(&quad[k], step + first_lane, sizeof quad[k]);
    } else {
      static_assert(std::is_same_v<Scalar, c10::BFloat16>, "read directly: float and bfloat16");
      // The elements of these lanes: from 32 * half + 2 * base, every other one, in one load.
      const int half = first_lane / 32, in_half = first_lane % 32;
      const bool odd = in_half >= 16;
      const int base = odd ? in_half - 16 : in_half;
      typename V::Uint pairs;
      std::memcpy(&pairs, step + 32 * half + 2 * base, sizeof pairs);
      quad[k] = (typename V::Float)(odd ? (pairs & 0xffff0000u) : (pairs << 16));
    }
  }
}

/// Asks for the step one block after `step` to be brought into L1. The block's fields are counted
/// after its loads, in L1, while memory would otherwise idle: with this, a tensor past the caches
/// reads about 1.1x at::sum instead of 1.4 to 1.5x. Prefetches never fault, so those past the end
/// of the tensor cost only their slot (the address is formed as an integer, not as a pointer past
/// the end).
template <typename Scalar>
__attribute__((always_inline)) inline void prefetch_a_block_ahead(const Scalar* step) {
  const uintptr_t ahead = reinterpret_cast<uintptr_t>(step) + kBlock * sizeof(Scalar);
  for (uintptr_t line = 0; line < kStep * sizeof(Scalar); line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(ahead + line), 0, 3);
  }
}

/// The general path's per-element counters. They are left all zero after every fold, so one set
/// per thread serves every call on that thread without being cleared again (a kernel call on a
/// small tensor would otherwise spend most of its time zeroing and folding them).
struct CountingBins {
  uint32_t field_bins[kFieldCopies][256 + 16] = {};  // padded: copies in different L1 banks
};

/// The x86 denormal-operand flag (MXCSR.DE) as the fast path's test for fp32 subnormals, which
/// share exponent field 0 with zeros: every element of a block is an operand of the block's
/// float sums, so the flag, clear when the block starts, is raised by its end exactly where the
/// block held a subnormal. A block with zeros (every block of a ReLU's output) is then not read
/// again only to rule them out: that second read, in L1, made a ReLU's output 1.15 to 1.3x
/// slower, where one read of the flag costs about 6 ns. No other floating-point operation of the
/// fast path takes a subnormal operand: its values lie in [2^-60, 2^60), so their partial sums
/// and squares are normal, and blocks beyond that range are turned away before the flag is read.
/// The general path's operations may raise it, so it is cleared after each of its runs.
/// Not usable where the thread has DAZ on (denormal operands read as zero and raise nothing), nor
/// off x86: the block is then read again. Held for one chunk, on the thread that scans it, with
/// exceptions masked: a block's lanes may add +inf and -inf before the block is turned away. The
/// thread's MXCSR is put back at the chunk's end as it was at its start (MaskedFpExceptions).
class DenormalOperandFlag {
 public:
  DenormalOperandFlag() {
#ifdef MPNANNY_FP_STATE_IS_MXCSR
    usable_ = (masked_.masked_state() & kDenormalsAreZeros) == 0;
    clear();
#endif
  }
  DenormalOperandFlag(const DenormalOperandFlag&) = delete;
  DenormalOperandFlag& operator=(const DenormalOperandFlag&) = delete;

  bool usable() const { return usable_; }
#ifdef MPNANNY_FP_STATE_IS_MXCSR
  bool raised() const { return (_mm_getcsr() & kDenormalOperand) != 0; }
  void clear() const { _mm_setcsr(masked_.masked_state() & ~kDenormalOperand); }
#else
  void clear() const {}
#endif

 private:
  static constexpr unsigned kDenormalOperand = 1u << 1, kDenormalsAreZeros = 1u << 6;
  const MaskedFpExceptions masked_;
  bool usable_ = false;
};

struct ChunkCounts {
  explicit ChunkCounts(CountingBins& bins, const DenormalOperandFlag* denormal_flag = nullptr)
      : bins(bins), denormal_flag(denormal_flag && denormal_flag->usable() ? denormal_flag : nullptr) {}
  CountingBins& bins;
  const DenormalOperandFlag* denormal_flag;  // null where it cannot tell
  // Counted directly: by the general path, and the fast path's compare lanes.
  int64_t nan_count = 0, inf_count = 0, zero_count = 0;
  int64_t fp16_overflow = 0, fp16_subnormal = 0, fp16_flush = 0;
  int64_t bf16_overflow = 0, bf16_subnormal = 0, bf16_flush = 0;
  // Fast-path elements, and those of them above fp16's flush limit; the rest of their counts
  // come from their classes (finish_float_counts).
  int64_t ordinary_count = 0, ordinary_above_fp16_flush = 0;
  double sum = 0, sum_squares = 0;
  int32_t max_bits = 0;                      // float path: max |x| as bits
  int32_t min_nonzero_bits = kInfinityBits;  // float path
  double max_abs_double = 0;                 // double path
  double min_abs_nonzero_double = std::numeric_limits<double>::infinity();
  // Float path: elements counted in `bins` since the last fold, the fast path's non-zero
  // exponent fields and the histogram (the general path's fields are folded straight into it).
  int64_t unfolded = 0;
  int64_t ordinary_fields[kFields] = {};
  // The transposing fast path's guess at the next block's fields: the first field of the window
  // it counts in its loop, from the last block's, or -1 to count after the loop.
  int in_loop_window = -1;
  // The fast path's sums, in double lanes (see kBlock), added into `sum` and `sum_squares` at
  // the end of the chunk.
  alignas(64) double lane_sums[kChunkLanes] = {};
  alignas(64) double lane_sum_squares[kChunkLanes] = {};
  int64_t histogram[kHistogramBuckets] = {};

  void fold() {
    // Only the fields the general path can have counted: from the smallest magnitude seen so
    // far (0 if it met zeros or fp32 subnormals) to the largest (255 if it met NaN or Inf).
    const int lowest = (zero_count + bf16_subnormal + bf16_flush > 0) ? 0 : (min_nonzero_bits >> 23);
    const int highest = (nan_count + inf_count > 0) ? 255 : std::min(max_bits >> 23, 254);
    for (int field = lowest; field <= highest; ++field) {
      for (auto& copy : bins.field_bins) {
        histogram[histogram_bucket_of_exponent_field(field)] += copy[field];
        copy[field] = 0;
      }
    }
    unfolded = 0;
  }

  /// After the last fold: the fast path's sums; the histogram's share from its fields, less the
  /// general path's zeros and NaNs (fields 0 and 255 of its exponent count, which are not
  /// magnitudes the histogram shows); then the fast path's zero and fp16 subnormal and flush
  /// counts, from its fields.
  void finish_float_counts() {
    int64_t nonzero = 0, at_or_above_fp16_normal = 0;
    // The fast path's non-zero fields lie within the chunk's extremes (none: an empty range).
    for (int field = min_nonzero_bits >> 23, highest = max_bits >> 23; field <= highest; ++field) {
      histogram[histogram_bucket_of_exponent_field(field)] += ordinary_fields[field];
      nonzero += ordinary_fields[field];
      if (field >= kFp16NormalField) at_or_above_fp16_normal += ordinary_fields[field];
    }
    for (int lane = 0; lane < kChunkLanes; ++lane) {
      sum += lane_sums[lane];
      sum_squares += lane_sum_squares[lane];
    }
    histogram[histogram_bucket_of_exponent_field(0)] -= zero_count;
    histogram[histogram_bucket_of_exponent_field(255)] -= nan_count;

    const int64_t zeros = ordinary_count - nonzero;
    zero_count += zeros;
    fp16_flush += ordinary_count - zeros - ordinary_above_fp16_flush;
    fp16_subnormal += ordinary_above_fp16_flush - at_or_above_fp16_normal;
  }
};

/// Adds `count` exponent fields to `Copies` interleaved copies of bins.
template <int Copies, size_t Bins>
__attribute__((always_inline)) inline void count_values(const uint8_t* values, int64_t count,
                                                        uint32_t (&bins)[Copies][Bins]) {
  int64_t i = 0;
  for (; i + Copies <= count; i += Copies) {
    for (int copy = 0; copy < Copies; ++copy) ++bins[copy][values[i + copy]];
  }
  for (; i < count; ++i) ++bins[0][values[i]];
}

/// The sum of a vector's byte lanes (each at most kBlock / 16, so no 16-bit sum overflows).
template <int kWidth>
__attribute__((always_inline)) inline int64_t byte_lanes_total(typename VectorTypes<kWidth>::Byte bytes) {
  using Word = typename VectorTypes<kWidth>::Word;
  const Word even_bytes = Word{} + 0x00ff00ff00ff00ffull;
  Word words = (Word)bytes;
  words = (words & even_bytes) + ((words >> 8) & even_bytes);  // four 16-bit sums per word
  words += words >> 16;
  words += words >> 32;
  int64_t total = 0;
  for (int lane = 0; lane < kWidth / 8; ++lane) total += static_cast<int64_t>(words[lane] & 0xffff);
  return total;
}

/// Counts the fields first .. first + kFieldGroup - 1 among `count` (a multiple of kStep, at most
/// kBlock) field bytes into `totals`: one compare and one subtract per field for a vector of
/// bytes. Returns how many it counted.
template <int kWidth>
__attribute__((always_inline)) inline int64_t count_field_group(const uint8_t* fields, int64_t count, int first,
                                                                int64_t* totals) {
  using Byte = typename VectorTypes<kWidth>::Byte;
  Byte matches[kFieldGroup] = {};
  for (int64_t i = 0; i < count; i += kWidth) {
    Byte block;
    std::memcpy(&block, fields + i, sizeof block);
    for (int g = 0; g < kFieldGroup; ++g) {
      matches[g] -= (Byte)(block == static_cast<uint8_t>(first + g));  // a true compare is 0xff
    }
  }
  int64_t counted = 0;
  for (int g = 0; g < kFieldGroup; ++g) {
    const int64_t matched = byte_lanes_total<kWidth>(matches[g]);
    totals[first + g] += matched;
    counted += matched;
  }
  return counted;
}

/// The general path: classifies `count` contiguous floats into `counts`, any values at all.
__attribute__((always_inline)) inline void scan_general_block(const float* values, int64_t count, ChunkCounts& counts) {
  int32_t nan = 0, inf = 0, zero = 0, h_over = 0, h_sub = 0, h_flush = 0, b_over = 0, b_sub = 0, b_flush = 0;
  int32_t max_bits = counts.max_bits, min_bits = counts.min_nonzero_bits;
  double sum = 0, sum_squares = 0;
  alignas(64) uint8_t fields[kBlock];
  // The pragma allows the double sums to be reassociated across lanes.
#pragma omp simd reduction(+ : nan, inf, zero, h_over, h_sub, h_flush, b_over, b_sub, b_flush, sum, sum_squares) \
    reduction(max : max_bits) reduction(min : min_bits)
  for (int64_t i = 0; i < count; ++i) {
    int32_t raw;
    std::memcpy(&raw, &values[i], sizeof raw);
    const int32_t bits = raw & 0x7fffffff;
    fields[i] = static_cast<uint8_t>(bits >> 23);
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
  count_values(fields, count, counts.bins.field_bins);
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

/// How many of `count` (a multiple of kStep) values have a magnitude whose bits, as float, exceed
/// `bound`.
template <int kWidth, typename Scalar>
__attribute__((always_inline)) inline int64_t count_magnitudes_above(const Scalar* values, int64_t count,
                                                                     int32_t bound) {
  using V = VectorTypes<kWidth>;
  const typename V::Int magnitude_mask = typename V::Int{} + 0x7fffffff;
  const typename V::Int bounds = typename V::Int{} + bound;
  typename V::Int above{};
  for (int64_t i = 0; i < count; i += kStep) {
#pragma GCC unroll 4
    for (int q = 0; q < V::kVectorsPerStep / 4; ++q) {
      typename V::Float quad[4];
      load_quad<kWidth>(values + i, q, quad);
      for (const auto& value : quad) above -= ((typename V::Int)value & magnitude_mask) > bounds;  // true is -1
    }
  }
  int64_t total = 0;
  for (int lane = 0; lane < V::kLanes; ++lane) total += above[lane];
  return total;
}

#ifdef MPNANNY_X86_COPIES
#define MPNANNY_TRANSPOSE_TARGET "avx512f,avx512bw,avx512vl,avx512vbmi,avx512bitalg,gfni"
// GCC 12's unmasked AVX-512 intrinsics pass _mm512_undefined_epi32() as their merge source, which
// -Wmaybe-uninitialized (or -Wuninitialized) reports in every caller (GCC bug 105593, fixed in
// GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

/// The byte counts of a byte transposition (byte k of each of the 8 qwords counts window place
/// k), widened to 16 bits and added to `words`: word k of each of the 8 128-bit lanes, then.
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline __m512i widen_window_counts(__m512i counts, __m512i words) {
  return _mm512_add_epi16(words, _mm512_add_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(counts)),
                                                  _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(counts, 1))));
}

/// Adds widened window counts to totals[0..7], in vectors. Returns how many they counted.
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline int64_t add_window_counts(__m512i words, int64_t* totals) {
  const __m256i halves = _mm256_add_epi16(_mm512_castsi512_si256(words), _mm512_extracti64x4_epi64(words, 1));
  const __m512i places =
      _mm512_cvtepu16_epi64(_mm_add_epi16(_mm256_castsi256_si128(halves), _mm256_extracti128_si256(halves, 1)));
  _mm512_storeu_si512(totals, _mm512_add_epi64(_mm512_loadu_si512(totals), places));
  return _mm512_reduce_add_epi64(places);
}

/// A byte transposition count of one window of kFieldWindow fields, step by step (64 field bytes
/// a step): per qword, byte k of `low_counts` counts window place k, and of `high_counts` place
/// 8 + k. A byte gains at most 8 a step, so every kWindowFlushEvery fields the bytes are widened
/// into the 16-bit `low_words` and `high_words` (each gains at most 256 a flush, and at most
/// kBlock / 4 in a block). `Bytes` is any 64-byte vector type: the fast path, compiled for the
/// baseline target until it is inlined, holds GCC's own.
template <typename Bytes>
struct WindowCount {
  Bytes low_counts{}, high_counts{}, low_words{}, high_words{};
};
constexpr int64_t kWindowFlushEvery = 1024;

/// The one-hot byte of each window place: places 0..7 in the first table, 8..15 in the second,
/// none for places 16..63.
alignas(64) constexpr uint8_t kWindowOneHot[2][64] = {{1, 2, 4, 8, 16, 32, 64, 128},
                                                      {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128}};

/// Adds a step's one-hot bytes, for the window's low and its high 8 places, to its byte counts.
template <typename Bytes>
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline void add_one_hot_step(__m512i low_bits, __m512i high_bits,
                                                                               WindowCount<Bytes>& window) {
  // With each element's one-hot byte as the matrix, the affine transform of the bytes 2^k
  // yields bit k of the qword's 8 bytes in byte k.
  const __m512i transpose = _mm512_set1_epi64(static_cast<int64_t>(0x8040201008040201ull));
  window.low_counts = (Bytes)_mm512_add_epi8((__m512i)window.low_counts,
                                             _mm512_popcnt_epi8(_mm512_gf2p8affine_epi64_epi8(transpose, low_bits, 0)));
  window.high_counts = (Bytes)_mm512_add_epi8(
      (__m512i)window.high_counts, _mm512_popcnt_epi8(_mm512_gf2p8affine_epi64_epi8(transpose, high_bits, 0)));
}

/// Counts one step's 64 field bytes at `fields` into the window from field `window_start`.
/// Fields below the window wrap to 256 - window_start and up (over 63: the fast path's fields are
/// at most 186), fields above it exceed 15: both land on a zero byte of the one-hot tables.
template <typename Bytes>
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline void count_window_step(const uint8_t* fields, int window_start,
                                                                                WindowCount<Bytes>& window) {
  const __m512i outside = _mm512_set1_epi8(63);  // a place whose one-hot byte is 0 in both tables
  const __m512i place = _mm512_min_epu8(
      _mm512_sub_epi8(_mm512_loadu_si512(fields), _mm512_set1_epi8(static_cast<char>(window_start))), outside);
  add_one_hot_step(_mm512_permutexvar_epi8(place, _mm512_load_si512(kWindowOneHot[0])),
                   _mm512_permutexvar_epi8(place, _mm512_load_si512(kWindowOneHot[1])), window);
}

/// count_window_step for the fast path's loop, one operation less: the one-hot tables are rotated
/// to the window, so that a field's low 6 bits (all vpermb reads) pick its place, and zeros are
/// masked out. A field 64 away from one in the window lands in it too: the caller checks that
/// the block's non-zero fields lie where none does (rotated_window_holds).
template <typename Bytes>
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline void count_window_step_rotated(const uint8_t* fields,
                                                                                        int window_start,
                                                                                        WindowCount<Bytes>& window) {
  alignas(64) static constexpr uint8_t kIota[64] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                                    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
                                                    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
                                                    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
  // Entry f of a rotated table is the one-hot byte of place f - window_start (mod 64): loop
  // invariant, so made once per block.
  const __m512i places_of_entries =
      _mm512_sub_epi8(_mm512_load_si512(kIota), _mm512_set1_epi8(static_cast<char>(window_start)));
  const __m512i low_one_hot = _mm512_permutexvar_epi8(places_of_entries, _mm512_load_si512(kWindowOneHot[0]));
  const __m512i high_one_hot = _mm512_permutexvar_epi8(places_of_entries, _mm512_load_si512(kWindowOneHot[1]));
  const __m512i field_bytes = _mm512_loadu_si512(fields);
  const __mmask64 nonzero = _mm512_test_epi8_mask(field_bytes, field_bytes);
  add_one_hot_step(_mm512_maskz_permutexvar_epi8(nonzero, field_bytes, low_one_hot),
                   _mm512_maskz_permutexvar_epi8(nonzero, field_bytes, high_one_hot), window);
}

/// Whether fields min_field .. max_field are counted right by count_window_step_rotated: none of
/// them is 64 away from a field of the window.
inline bool rotated_window_holds(int window_start, int min_field, int max_field) {
  return min_field >= window_start + kFieldWindow - 64 && max_field < window_start + 64;
}

/// Widens the window's byte counts into its words, and clears them.
template <typename Bytes>
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline void flush_window_count(WindowCount<Bytes>& window) {
  window.low_words = (Bytes)widen_window_counts((__m512i)window.low_counts, (__m512i)window.low_words);
  window.high_words = (Bytes)widen_window_counts((__m512i)window.high_counts, (__m512i)window.high_words);
  window.low_counts = Bytes{};
  window.high_counts = Bytes{};
}

/// Adds a flushed window's counts to totals[window_start .. window_start + kFieldWindow - 1].
/// Returns how many it counted.
template <typename Bytes>
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline int64_t add_window_count(const WindowCount<Bytes>& window,
                                                                                  int window_start, int64_t* totals) {
  return add_window_counts((__m512i)window.low_words, totals + window_start) +
         add_window_counts((__m512i)window.high_words, totals + window_start + 8);
}

/// Counts the fields first .. last among `count` (a multiple of 64, at most kBlock) field bytes
/// into `totals`, by byte transposition, kFieldWindow fields per read of the bytes. The last
/// window may run past `last`: the caller has no fields there, or counts them itself. Returns how
/// many it counted.
__attribute__((target(MPNANNY_TRANSPOSE_TARGET), noinline)) int64_t count_fields_by_transposition(const uint8_t* fields,
                                                                                                  int64_t count,
                                                                                                  int first, int last,
                                                                                                  int64_t* totals) {
  int64_t counted = 0;
  for (int window_start = first; window_start <= last; window_start += kFieldWindow) {
    WindowCount<VectorTypes<64>::Byte> window;
    for (int64_t flush_start = 0; flush_start < count; flush_start += kWindowFlushEvery) {
      for (int64_t i = flush_start, end = std::min(count, flush_start + kWindowFlushEvery); i < end; i += 64) {
        count_window_step(fields + i, window_start, window);
      }
      flush_window_count(window);
    }
    counted += add_window_count(window, window_start, totals);
  }
  return counted;
}

/// Counts the fields outside the window from field `window_start` among `count` (a multiple of
/// 64) field bytes, none of them 0, one by one into `totals`: for the few elements of a block that
/// fall outside the window it counted in its loop (a dozen or so, for values from one
/// distribution), where counting another window reads all of the block's fields again.
/// Returns how many it counted.
__attribute__((target(MPNANNY_TRANSPOSE_TARGET), noinline)) int64_t count_fields_outside_window(const uint8_t* fields,
                                                                                                int64_t count,
                                                                                                int window_start,
                                                                                                int64_t* totals) {
  const __m512i start = _mm512_set1_epi8(static_cast<char>(window_start));
  const __m512i width = _mm512_set1_epi8(kFieldWindow);
  int64_t counted = 0;
  for (int64_t i = 0; i < count; i += 64) {
    const __m512i place = _mm512_sub_epi8(_mm512_loadu_si512(fields + i), start);
    for (uint64_t outside = _mm512_cmpge_epu8_mask(place, width); outside != 0; outside &= outside - 1) {
      ++totals[fields[i + __builtin_ctzll(outside)]];
      ++counted;
    }
  }
  return counted;
}

/// Stores the exponent fields of four vectors of 16 floats as 64 bytes (64-byte aligned), in any
/// order: VBMI's multishift copies the 8 bits at any offset of a qword into any of its bytes, so
/// vector a's two fields per qword (bits 23 and 55 up) land in bytes 2a and 2a + 1. Four
/// operations for 64 fields, where shifts and byte shuffles took seven.
/// Not always_inline: the fast path it is called from is compiled for the baseline target until
/// it is inlined into the transposing copy, and GCC refuses to force a target function into a
/// baseline one; it inlines it there by itself.
template <typename Float>
__attribute__((target(MPNANNY_TRANSPOSE_TARGET))) inline void store_fields_multishift(const Float (&vectors)[4],
                                                                                      uint8_t* destination) {
  const __m512i offsets = _mm512_set1_epi64(0x3717371737173717ll);  // 23, 55, 23, 55, ...
  __m512i fields = _mm512_multishift_epi64_epi8(offsets, (__m512i)vectors[0]);
  fields = _mm512_mask_multishift_epi64_epi8(fields, 0x0c0c0c0c0c0c0c0cull, offsets, (__m512i)vectors[1]);
  fields = _mm512_mask_multishift_epi64_epi8(fields, 0x3030303030303030ull, offsets, (__m512i)vectors[2]);
  fields = _mm512_mask_multishift_epi64_epi8(fields, 0xc0c0c0c0c0c0c0c0ull, offsets, (__m512i)vectors[3]);
  _mm512_store_si512(destination, fields);
}

/// The largest of the bytes 16 apart in a 64-byte vector: 64 bytes to 16.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m128i max_bytes_to_lane(__m512i bytes) {
  const __m256i halves = _mm256_max_epu8(_mm512_castsi512_si256(bytes), _mm512_extracti64x4_epi64(bytes, 1));
  return _mm_max_epu8(_mm256_castsi256_si128(halves), _mm256_extracti128_si256(halves, 1));
}

/// The largest byte of `maxima` and the smallest of `minima` and of `more_minima`, in one
/// reduction, about half the operations of three: minima are the maxima of the complements.
/// Not always_inline, for the reason given at store_fields_multishift.
template <typename Bytes>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void reduce_byte_extremes(
    const Bytes& maxima, const Bytes& minima, const Bytes& more_minima, int& max, int& min, int& more_min) {
  const __m512i ones = _mm512_set1_epi8(-1);
  __m512i lanes = _mm512_zextsi128_si512(max_bytes_to_lane((__m512i)maxima));
  lanes = _mm512_inserti32x4(lanes, max_bytes_to_lane(_mm512_xor_si512((__m512i)minima, ones)), 1);
  lanes = _mm512_inserti32x4(lanes, max_bytes_to_lane(_mm512_xor_si512((__m512i)more_minima, ones)), 2);
  // Each 16-byte lane's largest byte into its byte 0.
  lanes = _mm512_max_epu8(lanes, _mm512_bsrli_epi128(lanes, 8));
  lanes = _mm512_max_epu8(lanes, _mm512_bsrli_epi128(lanes, 4));
  lanes = _mm512_max_epu8(lanes, _mm512_bsrli_epi128(lanes, 2));
  lanes = _mm512_max_epu8(lanes, _mm512_bsrli_epi128(lanes, 1));
  alignas(64) uint8_t bytes[64];
  _mm512_store_si512(bytes, lanes);
  max = bytes[0];
  min = 0xff - bytes[16];
  more_min = 0xff - bytes[32];
}

/// Nibble counting (count_fields_by_nibbles): the shuffle table of a pair of window places, which
/// adds 1 for the even place and 16 for the odd one.
inline __m128i nibble_table(int pair) {
  alignas(16) uint8_t table[16] = {};
  table[2 * pair] = 1;
  table[2 * pair + 1] = 16;
  return _mm_load_si128(reinterpret_cast<const __m128i*>(table));
}

/// Counts the fields first .. first + 2 * kPairs - 1 among `count` (a multiple of kWidth) field
/// bytes into `totals`, by byte shuffles, for the AVX2 (kWidth 32) and AVX-512 (64) copies: each
/// byte becomes its place in the window (bytes outside it get bit 7, which a shuffle maps to 0),
/// and one shuffle and one add per pair of places count it into a byte of two nibbles: one
/// operation per field for a vector of bytes, where compares take two. A nibble holds 15, so every
/// 15 vectors the bytes are summed into qwords (psadbw): their low nibbles, and the bytes whole
/// (low + 16 * high). Returns how many it counted.
// GCC notes that this template, compiled for the baseline target, passes AVX vectors to its Ops;
// it is only ever inlined into the two copies' wrappers below, so no call crosses an ABI.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <int kWidth, int kPairs, typename Vector, typename Ops>
__attribute__((always_inline)) inline int64_t count_fields_by_nibbles(const uint8_t* fields, int64_t count, int first,
                                                                      int64_t* totals, const Ops& ops) {
  constexpr int64_t kDrainEvery = 15 * kWidth;
  Vector tables[kPairs];
  for (int pair = 0; pair < kPairs; ++pair) tables[pair] = ops.broadcast(nibble_table(pair));
  const Vector start = ops.bytes(static_cast<char>(first)), bias = ops.bytes(0x70), low = ops.bytes(0x0f);
  Vector low_sums[kPairs], byte_sums[kPairs];
  for (int pair = 0; pair < kPairs; ++pair) low_sums[pair] = byte_sums[pair] = ops.zero();
  for (int64_t drain_start = 0; drain_start < count; drain_start += kDrainEvery) {
    Vector nibbles[kPairs];
    for (auto& n : nibbles) n = ops.zero();
    for (int64_t i = drain_start, end = std::min(count, drain_start + kDrainEvery); i < end; i += kWidth) {
      // Places 0..15 become 0x70..0x7f; the rest (fields below the window wrap to at least 256 -
      // first, over 15: the fast path's fields are 67 or more) saturate at 0x80 and up.
      const Vector place = ops.adds(ops.sub(ops.load(fields + i), start), bias);
      for (int pair = 0; pair < kPairs; ++pair) {
        nibbles[pair] = ops.add8(nibbles[pair], ops.shuffle(tables[pair], place));
      }
    }
    for (int pair = 0; pair < kPairs; ++pair) {
      low_sums[pair] = ops.add64(low_sums[pair], ops.sad(ops.and_(nibbles[pair], low)));
      byte_sums[pair] = ops.add64(byte_sums[pair], ops.sad(nibbles[pair]));
    }
  }
  int64_t counted = 0;
  for (int pair = 0; pair < kPairs; ++pair) {
    const int64_t even = ops.total(low_sums[pair]);
    const int64_t odd = (ops.total(byte_sums[pair]) - even) / 16;
    totals[first + 2 * pair] += even;
    totals[first + 2 * pair + 1] += odd;
    counted += even + odd;
  }
  return counted;
}
#pragma GCC diagnostic pop

/// Place pairs a nibble count takes at once: as many as keep its tables and counts in registers
/// (16 in the AVX2 copy, 32 in the AVX-512 one; eight pairs in the AVX2 copy spill, and measured
/// 10 % slower than compares).
constexpr int kNibblePairsAvx2 = 4;
constexpr int kNibblePairsAvx512 = 8;
static_assert(2 * kNibblePairsAvx512 <= kFieldWindow, "a nibble window past the largest field");

/// The vector operations count_fields_by_nibbles uses, in each copy's width.
struct NibbleOpsAvx2 {
  __attribute__((target("avx2"))) __m256i broadcast(__m128i t) const { return _mm256_broadcastsi128_si256(t); }
  __attribute__((target("avx2"))) __m256i bytes(char b) const { return _mm256_set1_epi8(b); }
  __attribute__((target("avx2"))) __m256i zero() const { return _mm256_setzero_si256(); }
  __attribute__((target("avx2"))) __m256i load(const uint8_t* p) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  __attribute__((target("avx2"))) __m256i sub(__m256i a, __m256i b) const { return _mm256_sub_epi8(a, b); }
  __attribute__((target("avx2"))) __m256i adds(__m256i a, __m256i b) const { return _mm256_adds_epu8(a, b); }
  __attribute__((target("avx2"))) __m256i add8(__m256i a, __m256i b) const { return _mm256_add_epi8(a, b); }
  __attribute__((target("avx2"))) __m256i add64(__m256i a, __m256i b) const { return _mm256_add_epi64(a, b); }
  __attribute__((target("avx2"))) __m256i and_(__m256i a, __m256i b) const { return _mm256_and_si256(a, b); }
  __attribute__((target("avx2"))) __m256i shuffle(__m256i t, __m256i i) const { return _mm256_shuffle_epi8(t, i); }
  __attribute__((target("avx2"))) __m256i sad(__m256i a) const { return _mm256_sad_epu8(a, _mm256_setzero_si256()); }
  __attribute__((target("avx2"))) int64_t total(__m256i a) const {
    alignas(32) int64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
  }
};

struct NibbleOpsAvx512 {
  __attribute__((target("avx512f,avx512bw"))) __m512i broadcast(__m128i t) const { return _mm512_broadcast_i32x4(t); }
  __attribute__((target("avx512f,avx512bw"))) __m512i bytes(char b) const { return _mm512_set1_epi8(b); }
  __attribute__((target("avx512f,avx512bw"))) __m512i zero() const { return _mm512_setzero_si512(); }
  __attribute__((target("avx512f,avx512bw"))) __m512i load(const uint8_t* p) const { return _mm512_loadu_si512(p); }
  __attribute__((target("avx512f,avx512bw"))) __m512i sub(__m512i a, __m512i b) const { return _mm512_sub_epi8(a, b); }
  __attribute__((target("avx512f,avx512bw"))) __m512i adds(__m512i a, __m512i b) const {
    return _mm512_adds_epu8(a, b);
  }
  __attribute__((target("avx512f,avx512bw"))) __m512i add8(__m512i a, __m512i b) const { return _mm512_add_epi8(a, b); }
  __attribute__((target("avx512f,avx512bw"))) __m512i add64(__m512i a, __m512i b) const {
    return _mm512_add_epi64(a, b);
  }
  __attribute__((target("avx512f,avx512bw"))) __m512i and_(__m512i a, __m512i b) const {
    return _mm512_and_si512(a, b);
  }
  __attribute__((target("avx512f,avx512bw"))) __m512i shuffle(__m512i t, __m512i i) const {
    return _mm512_shuffle_epi8(t, i);
  }
  __attribute__((target("avx512f,avx512bw"))) __m512i sad(__m512i a) const {
    return _mm512_sad_epu8(a, _mm512_setzero_si512());
  }
  __attribute__((target("avx512f,avx512bw"))) int64_t total(__m512i a) const { return _mm512_reduce_add_epi64(a); }
};

__attribute__((target("avx2"), noinline)) int64_t count_fields_by_nibbles_avx2(const uint8_t* fields, int64_t count,
                                                                               int first, int64_t* totals) {
  return count_fields_by_nibbles<32, kNibblePairsAvx2, __m256i>(fields, count, first, totals, NibbleOpsAvx2{});
}
__attribute__((target("avx512f,avx512bw"), noinline)) int64_t count_fields_by_nibbles_avx512(const uint8_t* fields,
                                                                                             int64_t count, int first,
                                                                                             int64_t* totals) {
  return count_fields_by_nibbles<64, kNibblePairsAvx512, __m512i>(fields, count, first, totals, NibbleOpsAvx512{});
}
#pragma GCC diagnostic pop
#endif

#ifdef MPNANNY_X86_COPIES
// Not always_inline, for the reason given at store_fields_multishift; by reference, because GCC
// warns that a baseline-target caller passing AVX vectors by value changes the ABI.
template <typename Float>
__attribute__((target("avx512f"))) inline void fused_add_square_avx512(Float& sum, const Float& value) {
  sum = (Float)_mm512_fmadd_ps((__m512)value, (__m512)value, (__m512)sum);
}
template <typename Float>
__attribute__((target("avx2,fma"))) inline void fused_add_square_avx2(Float& sum, const Float& value) {
  sum = (Float)_mm256_fmadd_ps((__m256)value, (__m256)value, (__m256)sum);
}
#endif

/// sum += value * value, fused (one operation and one rounding) in the copies whose CPUs have
/// FMA: the AVX2 and AVX-512 ones.
template <int kWidth, typename Float>
__attribute__((always_inline)) inline void add_square(Float& sum, const Float& value) {
#ifdef MPNANNY_X86_COPIES
  if constexpr (kWidth == 64) {
    fused_add_square_avx512(sum, value);
    return;
  } else if constexpr (kWidth == 32) {
    fused_add_square_avx2(sum, value);
    return;
  }
#endif
  sum += value * value;
}

/// How the fast path counts its exponent fields (see the comment at kBlock).
enum class FieldCounting { kCompare, kTranspose };

/// Magnitudes as their bits (ordered like the magnitudes).
struct MagnitudeExtremes {
  int32_t max_bits = 0;
  int32_t min_nonzero_bits = kInfinityBits;  // where all are zero
};

/// The largest magnitude (if kMax) and the smallest non-zero one (if kMin) among `count` (a
/// multiple of kStep) values.
template <int kWidth, bool kMax, bool kMin, typename Scalar>
__attribute__((always_inline)) inline MagnitudeExtremes exact_extremes(const Scalar* values, int64_t count) {
  using V = VectorTypes<kWidth>;
  constexpr uint32_t kNoneLessOne = 2u * kInfinityBits - 1u;
  typename V::Uint maxima_doubled{}, minima_less_one = typename V::Uint{} + kNoneLessOne;
  for (int64_t i = 0; i < count; i += kStep) {
#pragma GCC unroll 4
    for (int q = 0; q < V::kVectorsPerStep / 4; ++q) {
      typename V::Float quad[4];
      load_quad<kWidth>(values + i, q, quad);
      for (const auto& value : quad) {
        // The magnitude's bits, doubled (the sign shifted out); less one, zeros wrap to the top.
        const typename V::Uint doubled = (typename V::Uint)value << 1;
        if constexpr (kMax) maxima_doubled = doubled > maxima_doubled ? doubled : maxima_doubled;
        if constexpr (kMin) {
          const typename V::Uint less_one = doubled - 1u;
          minima_less_one = less_one < minima_less_one ? less_one : minima_less_one;
        }
      }
    }
  }
  uint32_t max_doubled = 0, min_less_one = kNoneLessOne;
  for (int lane = 0; lane < V::kLanes; ++lane) {
    max_doubled = std::max(max_doubled, maxima_doubled[lane]);
    min_less_one = std::min(min_less_one, minima_less_one[lane]);
  }
  MagnitudeExtremes extremes;
  extremes.max_bits = static_cast<int32_t>(max_doubled >> 1);
  extremes.min_nonzero_bits = static_cast<int32_t>((min_less_one + 1u) >> 1);
  return extremes;
}

/// The fast path over the first `count` (a multiple of kStep, at most kBlock) floats or
/// bfloat16s of a block, in vectors of kWidth bytes. Returns false, having changed nothing, when
/// the block holds a value it does not handle.
template <int kWidth, FieldCounting kCounting, bool kCountInLoop, typename Scalar>
__attribute__((always_inline)) inline bool scan_ordinary_block(const Scalar* values, int64_t count,
                                                               ChunkCounts& counts) {
  using V = VectorTypes<kWidth>;
  using Uint = typename V::Uint;
  using Byte = typename V::Byte;
  constexpr int kVectors = V::kVectorsPerStep;
  typename V::Float sum[kVectors] = {}, sum_squares[kVectors] = {};
  // The largest and the smallest exponent field, and the smallest non-zero one less one (zeros
  // wrap to the top), in byte lanes.
  Byte max_fields{}, min_fields = Byte{} + 0xff, min_fields_less_one = Byte{} + 0xff;
  alignas(64) uint8_t field_bytes[kBlock];
  static_assert(!kCountInLoop || kCounting == FieldCounting::kTranspose, "only byte transposition counts in the loop");
  const int in_loop_window = counts.in_loop_window;
  WindowCount<Byte> in_loop;
  for (int64_t i = 0; i < count; i += kStep) {
    // Four vectors at a time, whose fields fill one vector of bytes (in any order: only their
    // counts matter). Only four are loaded at once: the AVX2 copy's eight would not fit in its
    // registers beside the sums.
    prefetch_a_block_ahead(values + i);
#pragma GCC unroll 4
    for (int a = 0; a < kVectors; a += 4) {
      typename V::Float quad[4];
      load_quad<kWidth>(values + i, a / 4, quad);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        sum[a + q] += quad[q];
        add_square<kWidth>(sum_squares[a + q], quad[q]);
      }
      uint8_t* quad_fields = field_bytes + i + a * V::kLanes;
      if constexpr (kCounting == FieldCounting::kTranspose) {
        static_assert(kWidth == 64, "byte transposition runs on 64-byte vectors");
#ifdef MPNANNY_X86_COPIES
        store_fields_multishift(quad, quad_fields);
#endif
      } else {
        // The fields (bits 23 to 30) packed by shifts and masks, which every vector unit has:
        // eleven operations for four vectors. A cast between vectors keeps the bits.
        const Uint packed = (((Uint)quad[0] >> 23) & 0xffu) | (((Uint)quad[1] >> 15) & 0xff00u) |
                            (((Uint)quad[2] >> 7) & 0xff0000u) | (((Uint)quad[3] << 1) & 0xff000000u);
        std::memcpy(quad_fields, &packed, sizeof packed);
      }
    }
#ifdef MPNANNY_X86_COPIES
    if constexpr (kCountInLoop) {
      count_window_step_rotated(field_bytes + i, in_loop_window, in_loop);
      if (i % kWindowFlushEvery == kWindowFlushEvery - kStep) flush_window_count(in_loop);
    }
#endif
    for (int b = 0; b < kStep; b += kWidth) {
      Byte fields;
      std::memcpy(&fields, field_bytes + i + b, sizeof fields);
      max_fields = fields > max_fields ? fields : max_fields;
      min_fields = fields < min_fields ? fields : min_fields;
      const Byte less_one = fields - 1;
      min_fields_less_one = less_one < min_fields_less_one ? less_one : min_fields_less_one;
    }
  }
  int max_field = 0, min_field_less_one = 0xff, lowest_field = 0xff;
#ifdef MPNANNY_X86_COPIES
  if constexpr (kWidth == 64) {
    reduce_byte_extremes(max_fields, min_fields_less_one, min_fields, max_field, min_field_less_one, lowest_field);
  } else
#endif
  {
    for (int lane = 0; lane < kWidth; ++lane) {
      max_field = std::max<int>(max_field, max_fields[lane]);
      min_field_less_one = std::min<int>(min_field_less_one, min_fields_less_one[lane]);
      lowest_field = std::min<int>(lowest_field, min_fields[lane]);
    }
  }
  const bool has_nonzero = min_field_less_one != 0xff;
  const int min_field = min_field_less_one + 1;
  // The bounds are powers of two, so fields decide them exactly.
  if (max_field >= (kOrdinaryMaxBits >> 23) || (has_nonzero && min_field < (kOrdinaryMinBits >> 23))) return false;
  // Field 0 holds zeros and fp32 subnormals alike; a subnormal sends the block down the general
  // path.
  bool subnormals_ruled_out = false;
#ifdef MPNANNY_X86_COPIES
  if (lowest_field == 0 && counts.denormal_flag) {
    // The flag covers the whole block once every add of the sums has run: these empty asm
    // statements take the sums as inputs and, volatile, stay before the flag's read.
    for (int v = 0; v < kVectors; ++v) asm volatile("" : : "x"(sum[v]), "x"(sum_squares[v]));
    if (counts.denormal_flag->raised()) return false;
    subnormals_ruled_out = true;
  }
#endif
  // The exact extremes cost two operations per vector each, so the block is read again for them
  // (in L1) only where needed: the largest magnitude where the block's largest field reaches the
  // chunk's so far, the smallest non-zero one where field 0 holds elements not known to be zeros
  // or where the block's smallest field is at or below the chunk's. For values drawn from one
  // distribution: the first few blocks, and then the few that hold the rare extremes.
  const bool need_max = max_field >= (counts.max_bits >> 23);
  const bool need_min = (lowest_field == 0 && !subnormals_ruled_out) || min_field <= (counts.min_nonzero_bits >> 23);
  if (need_max || need_min) {
    const MagnitudeExtremes extremes = need_max && need_min ? exact_extremes<kWidth, true, true>(values, count)
                                       : need_max           ? exact_extremes<kWidth, true, false>(values, count)
                                                            : exact_extremes<kWidth, false, true>(values, count);
    if (need_min) {
      if (extremes.min_nonzero_bits < kOrdinaryMinBits) return false;
      counts.min_nonzero_bits = std::min(counts.min_nonzero_bits, extremes.min_nonzero_bits);
    }
    if (need_max) counts.max_bits = std::max(counts.max_bits, extremes.max_bits);
  }

  // Non-zero elements have the fields of the block's smallest to largest non-zero magnitude;
  // the rest are zeros.
  int64_t nonzero = 0;
  if (has_nonzero) {
#ifdef MPNANNY_X86_COPIES
    if constexpr (kCountInLoop) {
      // The fields the window missed: one by one where they are few (and no zeros hide among
      // the elements it did not count), otherwise in windows below it (that end where it starts)
      // and above it.
      flush_window_count(in_loop);
      if (!rotated_window_holds(in_loop_window, min_field, max_field)) {
        // The window also counted fields 64 away from its own: all of them again instead.
        nonzero = count_fields_by_transposition(field_bytes, count, min_field, max_field, counts.ordinary_fields);
      } else {
        const int64_t in_window = add_window_count(in_loop, in_loop_window, counts.ordinary_fields);
        nonzero = in_window;
        constexpr int64_t kFewMissed = 32;
        if (lowest_field != 0 && count - in_window <= kFewMissed) {
          if (count > in_window) {
            nonzero += count_fields_outside_window(field_bytes, count, in_loop_window, counts.ordinary_fields);
          }
        } else {
          if (min_field < in_loop_window) {
            const int windows_below = (in_loop_window - min_field + kFieldWindow - 1) / kFieldWindow;
            nonzero += count_fields_by_transposition(field_bytes, count, in_loop_window - kFieldWindow * windows_below,
                                                     in_loop_window - 1, counts.ordinary_fields);
          }
          if (max_field >= in_loop_window + kFieldWindow) {
            nonzero += count_fields_by_transposition(field_bytes, count, in_loop_window + kFieldWindow, max_field,
                                                     counts.ordinary_fields);
          }
        }
      }
    } else if constexpr (kCounting == FieldCounting::kTranspose) {
      nonzero = count_fields_by_transposition(field_bytes, count, min_field, max_field, counts.ordinary_fields);
    }
#endif
    if constexpr (kCounting == FieldCounting::kTranspose) {
      // The next block is counted in the loop where this one's fields fit one window, with a
      // field to spare above them where they leave one (the smallest magnitudes of a block vary
      // more than its largest), and after it otherwise.
      counts.in_loop_window =
          max_field - min_field < kFieldWindow ? std::min(min_field, max_field - (kFieldWindow - 2)) : -1;
    }
    if constexpr (kCounting == FieldCounting::kCompare) {
#ifdef MPNANNY_X86_COPIES
      if constexpr (kWidth == 64) {
        for (int first = min_field; first <= max_field; first += 2 * kNibblePairsAvx512) {
          nonzero += count_fields_by_nibbles_avx512(field_bytes, count, first, counts.ordinary_fields);
        }
      } else if constexpr (kWidth == 32) {
        for (int first = min_field; first <= max_field; first += 2 * kNibblePairsAvx2) {
          nonzero += count_fields_by_nibbles_avx2(field_bytes, count, first, counts.ordinary_fields);
        }
      } else
#endif
      {
        for (int group = min_field; group <= max_field; group += kFieldGroup) {
          nonzero += count_field_group<kWidth>(field_bytes, count, group, counts.ordinary_fields);
        }
      }
    }
  }
  // The fp16 limits fall inside binades, so the elements beyond them are counted here, in a
  // second read of the block, only where the block's fields reach them: nearly never for the
  // upper limit (65504, in field 142), and for the lower one (2^-25, the start of field 102)
  // only where the block holds magnitudes below 2^-24.
  constexpr auto kFp16MaxBits = static_cast<int32_t>(Fp32Thresholds::kFp16Max);
  constexpr auto kFp16FlushBits = static_cast<int32_t>(Fp32Thresholds::kFp16FlushAtOrBelow);
  if (max_field >= (kFp16MaxBits >> 23)) {
    counts.fp16_overflow += count_magnitudes_above<kWidth>(values, count, kFp16MaxBits);
  }
  if (has_nonzero) {
    counts.ordinary_above_fp16_flush +=
        min_field > (kFp16FlushBits >> 23) ? nonzero : count_magnitudes_above<kWidth>(values, count, kFp16FlushBits);
  }
  // The 64 lanes into the chunk's 16 double lanes, in one order whatever the vector width:
  // chunk lane l gains ((lane l + lane 16 + l) + lane 32 + l) + lane 48 + l. Elementwise, so it
  // runs in vectors.
  float lanes[kStep], square_lanes[kStep];
  std::memcpy(lanes, sum, sizeof lanes);
  std::memcpy(square_lanes, sum_squares, sizeof square_lanes);
  constexpr int k = kChunkLanes;
  for (int lane = 0; lane < k; ++lane) {
    counts.lane_sums[lane] +=
        ((static_cast<double>(lanes[lane]) + lanes[k + lane]) + lanes[2 * k + lane]) + lanes[3 * k + lane];
    counts.lane_sum_squares[lane] +=
        ((static_cast<double>(square_lanes[lane]) + square_lanes[k + lane]) + square_lanes[2 * k + lane]) +
        square_lanes[3 * k + lane];
  }
  counts.ordinary_count += count;
  return true;
}

#ifdef MPNANNY_X86_COPIES
/// Widens `count` contiguous halves exactly, eight at a time with F16C. GCC does not vectorize
/// c10::Half's conversion in the AVX2 copy: 1.2 ns per element there, four times the rest of the
/// pass.
__attribute__((target("avx2,f16c"), noinline)) void widen_halves_f16c(const c10::Half* source, int64_t count,
                                                                      float* buffer) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(buffer + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(source + i))));
  }
  for (; i < count; ++i) buffer[i] = static_cast<float>(source[i]);
}
#endif

/// Widens half and bfloat16 exactly (and gathers strided floats) into a float block.
template <typename Scalar, int kWidth>
__attribute__((always_inline)) inline const float* widen_block(const Scalar* source, int64_t stride, int64_t count,
                                                               float* buffer) {
  if constexpr (std::is_same_v<Scalar, float>) {
    if (stride == 1) return source;  // read in place
  }
#ifdef MPNANNY_X86_COPIES
  if constexpr (std::is_same_v<Scalar, c10::Half> && kWidth >= 32) {  // the AVX2 and AVX-512 copies have F16C
    if (stride == 1) {
      widen_halves_f16c(source, count, buffer);
      return buffer;
    }
  }
#endif
  if (stride == 1) {
    for (int64_t i = 0; i < count; ++i) buffer[i] = static_cast<float>(source[i]);
  } else {
    for (int64_t i = 0; i < count; ++i) buffer[i] = static_cast<float>(source[i * stride]);
  }
  return buffer;
}

/// Reads `count` (at most kBlock) contiguous floats, or bfloat16s, into `counts`; `buffer` has
/// room for the block widened to float, where the general path needs it.
template <int kWidth, FieldCounting kCounting, typename Scalar>
__attribute__((always_inline)) inline void scan_block(const Scalar* values, int64_t count, ChunkCounts& counts,
                                                      float* buffer) {
  const int64_t vectorized = count - count % kStep;
  int64_t done = 0;
  if (vectorized > 0) {
    bool ordinary;
    if constexpr (kCounting == FieldCounting::kTranspose) {
      ordinary = counts.in_loop_window >= 0 ? scan_ordinary_block<kWidth, kCounting, true>(values, vectorized, counts)
                                            : scan_ordinary_block<kWidth, kCounting, false>(values, vectorized, counts);
    } else {
      ordinary = scan_ordinary_block<kWidth, kCounting, false>(values, vectorized, counts);
    }
    if (ordinary) done = vectorized;
  }
  if (done < count) {
    scan_general_block(widen_block<Scalar, kWidth>(values + done, 1, count - done, buffer), count - done, counts);
    if (counts.denormal_flag) counts.denormal_flag->clear();
  }
}

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

#ifdef MPNANNY_X86_COPIES
/// MPNANNY_STATS_ISA=baseline|avx2|avx512 caps the instruction set the kernel uses: a machine
/// with the transposing copy would otherwise only ever test that one (CTest runs the stat tests
/// once per cap).
std::string stats_isa_cap() {
  const char* cap = std::getenv("MPNANNY_STATS_ISA");
  return cap ? std::string(cap) : std::string();
}
#endif

template <typename Scalar>
RunScanner<Scalar> pick_run_scanner() {
#ifdef MPNANNY_X86_COPIES
  const std::string cap = stats_isa_cap();
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

namespace {

template <typename Scalar>
double l2_distance_of(const Scalar* a, const Scalar* b, int64_t count) {
  double sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
  for (int64_t i = 0; i < count; ++i) {
    const double difference =
        static_cast<double>(static_cast<float>(a[i])) - static_cast<double>(static_cast<float>(b[i]));
    sum_squares += difference * difference;
  }
  return std::sqrt(sum_squares);
}

template <>
double l2_distance_of<double>(const double* a, const double* b, int64_t count) {
  double sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
  for (int64_t i = 0; i < count; ++i) sum_squares += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum_squares);
}

}  // namespace

double l2_distance(const at::Tensor& a, const at::Tensor& b) noexcept {
  try {
    at::RecordFunctionGuard no_observation(false);
    const bool direct = a.device().is_cpu() && b.device().is_cpu() && a.scalar_type() == b.scalar_type() &&
                        a.sizes() == b.sizes() && a.is_contiguous() && b.is_contiguous();
    if (direct) {
      switch (a.scalar_type()) {
        case at::kFloat: return l2_distance_of(a.data_ptr<float>(), b.data_ptr<float>(), a.numel());
        case at::kDouble: return l2_distance_of(a.data_ptr<double>(), b.data_ptr<double>(), a.numel());
        case at::kHalf: return l2_distance_of(a.data_ptr<c10::Half>(), b.data_ptr<c10::Half>(), a.numel());
        case at::kBFloat16: return l2_distance_of(a.data_ptr<c10::BFloat16>(), b.data_ptr<c10::BFloat16>(), a.numel());
        default: break;
      }
    }
    return a.dist(b).item<double>();
  } catch (...) {
    return std::numeric_limits<double>::quiet_NaN();
  }
}

bool is_observable_tensor(const at::Tensor& tensor) noexcept {
  if (!tensor.defined()) return false;
  const auto type = tensor.scalar_type();
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

TensorStats compute_tensor_stats(const at::Tensor& tensor) noexcept {
  try {
    if (!tensor.defined()) return {};
    // Reading a tensor must never show up as an observed op of its own.
    at::RecordFunctionGuard no_observation(false);
    // A sparse tensor holds its values and nothing else (its implicit zeros are not values a
    // format could round); values at one index are added first, as the tensor's arithmetic does.
    if (tensor.is_sparse()) return compute_tensor_stats(tensor.coalesce().values());
    if (tensor.layout() != at::kStrided) return {};
    // A complex number is two real ones in memory, each of which overflows or flushes on its own.
    if (tensor.is_complex()) return compute_tensor_stats(at::view_as_real(tensor.resolve_conj()));
    if (!is_observable_tensor(tensor) || tensor.numel() == 0) return {};
#ifdef MPNANNY_WITH_CUDA
    TensorStats on_device;
    if (tensor.is_cuda() && compute_tensor_stats_cuda(tensor, on_device)) return on_device;
#endif
    if (!tensor.device().is_cpu()) return compute_tensor_stats(tensor.to(at::kCPU));
    switch (tensor.scalar_type()) {
      case at::kFloat: return stats_of<float>(tensor);
      case at::kDouble: return stats_of<double>(tensor);
      case at::kHalf: return stats_of<c10::Half>(tensor);
      case at::kBFloat16: return stats_of<c10::BFloat16>(tensor);
      default: return {};
    }
  } catch (...) {
    return {};
  }
}

}  // namespace mpnanny
