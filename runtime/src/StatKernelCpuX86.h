// The CPU stat kernel, part 2 of 3 (see StatKernelCpuCounts.h): the x86 instructions it uses
// where the CPU has them. Counting exponent fields by byte transposition (AVX-512 with VBMI,
// BITALG and GFNI) and by byte shuffles (AVX2, AVX-512), fused squares, and half widening by F16C.
// Each function carries its own target attribute; the copy that calls it is chosen at load time.
#ifndef MPNANNY_RUNTIME_STATKERNELCPUX86_H
#define MPNANNY_RUNTIME_STATKERNELCPUX86_H

#include "StatKernelCpuCounts.h"

namespace mpnanny {
namespace {

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

}  // namespace
}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_STATKERNELCPUX86_H
