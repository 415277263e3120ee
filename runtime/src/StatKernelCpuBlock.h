// The CPU stat kernel, part 3 of 3 (see StatKernelCpuCounts.h): one block of a run, by the fast
// path where its values allow and by the general path otherwise. Everything here is inlined into
// each of the kernel's copies (StatKernelCpu.cpp), in that copy's vector width.
#ifndef MPNANNY_RUNTIME_STATKERNELCPUBLOCK_H
#define MPNANNY_RUNTIME_STATKERNELCPUBLOCK_H

#include "StatKernelCpuCounts.h"
#include "StatKernelCpuX86.h"

namespace mpnanny {
namespace {

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
  counts.count_flags(MagnitudeFlags<int32_t>{nan, inf, zero, h_over, h_sub, h_flush, b_over, b_sub, b_flush});
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

/// What the fast path's first read of a block tells of its exponent fields, from their bytes.
struct BlockFields {
  int max_field = 0;              // the largest field
  int min_field_less_one = 0xff;  // the smallest non-zero field, less one (0xff: every field is 0)
  int lowest_field = 0xff;        // the smallest field, 0 included

  bool has_nonzero() const { return min_field_less_one != 0xff; }
  int min_field() const { return min_field_less_one + 1; }
};

/// The fast path's one read of a block: adds its elements into the float lanes `sum` and
/// `sum_squares`, stores their exponent fields as bytes in `field_bytes` (and, with kCountInLoop,
/// counts the window from `in_loop_window` into `in_loop` as they are made), and returns the
/// fields' extremes.
template <int kWidth, FieldCounting kCounting, bool kCountInLoop, typename Scalar>
__attribute__((always_inline)) inline BlockFields read_ordinary_block(
    const Scalar* values, int64_t count,
    typename VectorTypes<kWidth>::Float (&sum)[VectorTypes<kWidth>::kVectorsPerStep],
    typename VectorTypes<kWidth>::Float (&sum_squares)[VectorTypes<kWidth>::kVectorsPerStep], uint8_t* field_bytes,
    int in_loop_window, WindowCount<typename VectorTypes<kWidth>::Byte>& in_loop) {
  using V = VectorTypes<kWidth>;
  using Uint = typename V::Uint;
  using Byte = typename V::Byte;
  constexpr int kVectors = V::kVectorsPerStep;
  // The largest and the smallest exponent field, and the smallest non-zero one less one (zeros
  // wrap to the top), in byte lanes.
  Byte max_fields{}, min_fields = Byte{} + 0xff, min_fields_less_one = Byte{} + 0xff;
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
  BlockFields extremes;
#ifdef MPNANNY_X86_COPIES
  if constexpr (kWidth == 64) {
    reduce_byte_extremes(max_fields, min_fields_less_one, min_fields, extremes.max_field, extremes.min_field_less_one,
                         extremes.lowest_field);
  } else
#endif
  {
    for (int lane = 0; lane < kWidth; ++lane) {
      extremes.max_field = std::max<int>(extremes.max_field, max_fields[lane]);
      extremes.min_field_less_one = std::min<int>(extremes.min_field_less_one, min_fields_less_one[lane]);
      extremes.lowest_field = std::min<int>(extremes.lowest_field, min_fields[lane]);
    }
  }
  return extremes;
}

/// The exact extremes cost two operations per vector each, so the block is read again for them
/// (in L1) only where needed: the largest magnitude where the block's largest field reaches the
/// chunk's so far, the smallest non-zero one where field 0 holds elements not known to be zeros
/// or where the block's smallest field is at or below the chunk's. For values drawn from one
/// distribution: the first few blocks, and then the few that hold the rare extremes. Returns
/// false, having changed nothing, where the block's smallest magnitude is an fp32 subnormal.
template <int kWidth, typename Scalar>
__attribute__((always_inline)) inline bool update_chunk_extremes(const Scalar* values, int64_t count,
                                                                 const BlockFields& fields, bool subnormals_ruled_out,
                                                                 ChunkCounts& counts) {
  const bool need_max = fields.max_field >= (counts.max_bits >> 23);
  const bool need_min =
      (fields.lowest_field == 0 && !subnormals_ruled_out) || fields.min_field() <= (counts.min_nonzero_bits >> 23);
  if (!need_max && !need_min) return true;
  const MagnitudeExtremes extremes = need_max && need_min ? exact_extremes<kWidth, true, true>(values, count)
                                     : need_max           ? exact_extremes<kWidth, true, false>(values, count)
                                                          : exact_extremes<kWidth, false, true>(values, count);
  if (need_min) {
    if (extremes.min_nonzero_bits < kOrdinaryMinBits) return false;
    counts.min_nonzero_bits = std::min(counts.min_nonzero_bits, extremes.min_nonzero_bits);
  }
  if (need_max) counts.max_bits = std::max(counts.max_bits, extremes.max_bits);
  return true;
}

/// Counts the block's non-zero exponent fields (those from its smallest to its largest non-zero
/// magnitude; the rest are zeros) into the chunk's, the way kCounting says, and returns how many.
/// The transposing copy also picks the window the next block counts in its loop.
template <int kWidth, FieldCounting kCounting, bool kCountInLoop>
__attribute__((always_inline)) inline int64_t count_block_fields(
    const uint8_t* field_bytes, int64_t count, const BlockFields& fields, int in_loop_window,
    WindowCount<typename VectorTypes<kWidth>::Byte>& in_loop, ChunkCounts& counts) {
  const int min_field = fields.min_field(), max_field = fields.max_field;
  int64_t nonzero = 0;
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
      if (fields.lowest_field != 0 && count - in_window <= kFewMissed) {
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
  return nonzero;
}

/// The fp16 limits fall inside binades, so the elements beyond them are counted here, in a
/// second read of the block, only where the block's fields reach them: nearly never for the
/// upper limit (65504, in field 142), and for the lower one (2^-25, the start of field 102)
/// only where the block holds magnitudes below 2^-24.
template <int kWidth, typename Scalar>
__attribute__((always_inline)) inline void count_fp16_limits(const Scalar* values, int64_t count,
                                                             const BlockFields& fields, int64_t nonzero,
                                                             ChunkCounts& counts) {
  constexpr auto kFp16MaxBits = static_cast<int32_t>(Fp32Thresholds::kFp16Max);
  constexpr auto kFp16FlushBits = static_cast<int32_t>(Fp32Thresholds::kFp16FlushAtOrBelow);
  if (fields.max_field >= (kFp16MaxBits >> 23)) {
    counts.fp16_overflow += count_magnitudes_above<kWidth>(values, count, kFp16MaxBits);
  }
  if (fields.has_nonzero()) {
    counts.ordinary_above_fp16_flush += fields.min_field() > (kFp16FlushBits >> 23)
                                            ? nonzero
                                            : count_magnitudes_above<kWidth>(values, count, kFp16FlushBits);
  }
}

/// The 64 float lanes into the chunk's 16 double lanes, in one order whatever the vector width:
/// chunk lane l gains ((lane l + lane 16 + l) + lane 32 + l) + lane 48 + l. Elementwise, so it
/// runs in vectors.
template <typename Float, int kVectors>
__attribute__((always_inline)) inline void add_block_sums(const Float (&sum)[kVectors],
                                                          const Float (&sum_squares)[kVectors], ChunkCounts& counts) {
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
}

/// The fast path over the first `count` (a multiple of kStep, at most kBlock) floats or
/// bfloat16s of a block, in vectors of kWidth bytes. Returns false, having changed nothing, when
/// the block holds a value it does not handle.
template <int kWidth, FieldCounting kCounting, bool kCountInLoop, typename Scalar>
__attribute__((always_inline)) inline bool scan_ordinary_block(const Scalar* values, int64_t count,
                                                               ChunkCounts& counts) {
  using V = VectorTypes<kWidth>;
  constexpr int kVectors = V::kVectorsPerStep;
  static_assert(!kCountInLoop || kCounting == FieldCounting::kTranspose, "only byte transposition counts in the loop");
  typename V::Float sum[kVectors] = {}, sum_squares[kVectors] = {};
  alignas(64) uint8_t field_bytes[kBlock];
  const int in_loop_window = counts.in_loop_window;
  WindowCount<typename V::Byte> in_loop;
  const BlockFields fields = read_ordinary_block<kWidth, kCounting, kCountInLoop>(values, count, sum, sum_squares,
                                                                                  field_bytes, in_loop_window, in_loop);
  // The bounds are powers of two, so fields decide them exactly.
  if (fields.max_field >= (kOrdinaryMaxBits >> 23) ||
      (fields.has_nonzero() && fields.min_field() < (kOrdinaryMinBits >> 23))) {
    return false;
  }
  // Field 0 holds zeros and fp32 subnormals alike; a subnormal sends the block down the general
  // path.
  bool subnormals_ruled_out = false;
#ifdef MPNANNY_X86_COPIES
  if (fields.lowest_field == 0 && counts.denormal_flag) {
    // The flag covers the whole block once every add of the sums has run: these empty asm
    // statements take the sums as inputs and, volatile, stay before the flag's read.
    for (int v = 0; v < kVectors; ++v) asm volatile("" : : "x"(sum[v]), "x"(sum_squares[v]));
    if (counts.denormal_flag->raised()) return false;
    subnormals_ruled_out = true;
  }
#endif
  if (!update_chunk_extremes<kWidth>(values, count, fields, subnormals_ruled_out, counts)) return false;
  const int64_t nonzero = fields.has_nonzero() ? count_block_fields<kWidth, kCounting, kCountInLoop>(
                                                     field_bytes, count, fields, in_loop_window, in_loop, counts)
                                               : 0;
  count_fp16_limits<kWidth>(values, count, fields, nonzero, counts);
  add_block_sums(sum, sum_squares, counts);
  counts.ordinary_count += count;
  return true;
}

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

}  // namespace
}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_STATKERNELCPUBLOCK_H
