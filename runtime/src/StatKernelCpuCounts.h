// The CPU stat kernel (StatKernelCpu.cpp), part 1 of 3: how it reads a tensor, and what it keeps
// while it reads a chunk. Part 2 (StatKernelCpuX86.h) holds the x86 instructions it uses where
// the CPU has them, part 3 (StatKernelCpuBlock.h) the reading of one block. These headers are
// pieces of that one translation unit, split by topic: everything in them has internal linkage,
// so that the compiler inlines them into the kernel's copies as it did in one file.
#ifndef MPNANNY_RUNTIME_STATKERNELCPUCOUNTS_H
#define MPNANNY_RUNTIME_STATKERNELCPUCOUNTS_H

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "MaskedFpExceptions.h"
#include "mpnanny/ElementClass.h"

// The stat kernel's x86 copies (AVX2, AVX-512, transposing AVX-512) are built with GCC's target
// attributes; other compilers and CPUs get the baseline copy only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MPNANNY_X86_COPIES 1
#include <immintrin.h>
#endif

namespace mpnanny {
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

// The class counts are counted directly: by the general path, and the fast path's compare lanes.
struct ChunkCounts : ClassCounts<int64_t> {
  explicit ChunkCounts(CountingBins& bins, const DenormalOperandFlag* denormal_flag = nullptr)
      : bins(bins), denormal_flag(denormal_flag && denormal_flag->usable() ? denormal_flag : nullptr) {}
  CountingBins& bins;
  const DenormalOperandFlag* denormal_flag;  // null where it cannot tell
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

}  // namespace
}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_STATKERNELCPUCOUNTS_H
