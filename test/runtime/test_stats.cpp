// The one-pass stat kernel against a plain reference written independently of ElementClass.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "mpnanny/TensorStats.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace mpnanny {
namespace {

TensorStats reference_stats(const at::Tensor& tensor) {
  const at::Tensor values = tensor.to(at::kDouble).contiguous();
  const double* data = values.data_ptr<double>();
  TensorStats stats;
  stats.numel = values.numel();
  for (int64_t i = 0; i < values.numel(); ++i) {
    const double x = data[i];
    const double a = std::fabs(x);
    if (std::isnan(x)) {
      ++stats.nan_count;
      continue;
    }
    if (std::isinf(x)) {
      ++stats.inf_count;
      ++stats.histogram[kHistogramBuckets - 1];
      continue;
    }
    if (a == 0.0) {
      ++stats.zero_count;
      continue;
    }
    stats.max_abs = std::max(stats.max_abs, a);
    stats.min_abs_nonzero = std::min(stats.min_abs_nonzero, a);
    stats.sum += x;
    stats.sum_squares += x * x;
    if (a > 65504.0) ++stats.fp16_overflow;
    if (a < std::ldexp(1.0, -14) && a > std::ldexp(1.0, -25)) ++stats.fp16_subnormal;
    if (a <= std::ldexp(1.0, -25)) ++stats.fp16_flush;
    if (a > 3.3895313892515355e+38) ++stats.bf16_overflow;
    if (a < std::ldexp(1.0, -126) && a > std::ldexp(1.0, -134)) ++stats.bf16_subnormal;
    if (a <= std::ldexp(1.0, -134)) ++stats.bf16_flush;
    const int exponent = static_cast<int>(std::floor(std::log2(a)));
    const int bucket = std::clamp(exponent - kHistogramMinExponent + 1, 0, kHistogramBuckets - 1);
    ++stats.histogram[bucket];
  }
  return stats;
}

void expect_equal_stats(const TensorStats& actual, const TensorStats& expected) {
  EXPECT_EQ(actual.numel, expected.numel);
  EXPECT_EQ(actual.nan_count, expected.nan_count);
  EXPECT_EQ(actual.inf_count, expected.inf_count);
  EXPECT_EQ(actual.zero_count, expected.zero_count);
  EXPECT_EQ(actual.fp16_overflow, expected.fp16_overflow);
  EXPECT_EQ(actual.fp16_subnormal, expected.fp16_subnormal);
  EXPECT_EQ(actual.fp16_flush, expected.fp16_flush);
  EXPECT_EQ(actual.bf16_overflow, expected.bf16_overflow);
  EXPECT_EQ(actual.bf16_subnormal, expected.bf16_subnormal);
  EXPECT_EQ(actual.bf16_flush, expected.bf16_flush);
  EXPECT_EQ(actual.histogram, expected.histogram);
  EXPECT_DOUBLE_EQ(actual.max_abs, expected.max_abs);
  EXPECT_DOUBLE_EQ(actual.min_abs_nonzero, expected.min_abs_nonzero);
  // The kernel adds a block's values and squares in float lanes of at most 32 terms, then the
  // lanes in double (the "fp32 or wider"): relative error at most 32 * 2^-24 < 2e-6 of
  // the sum of squares, and of the sum of magnitudes, which Cauchy-Schwarz bounds by
  // sqrt(n * sum of squares).
  const double tolerance = std::isinf(expected.sum_squares) ? 1e-6 : 1e-12 + 2e-6 * expected.sum_squares;
  const double sum_tolerance = std::isinf(expected.sum_squares)
                                   ? 1e-6 * std::fabs(expected.sum)
                                   : 1e-12 + 2e-6 * std::sqrt(expected.sum_squares * static_cast<double>(expected.numel));
  EXPECT_NEAR(actual.sum, expected.sum, sum_tolerance);
  if (std::isinf(expected.sum_squares)) {  // 1e300 squared: both must overflow the same way
    EXPECT_EQ(actual.sum_squares, expected.sum_squares);
  } else {
    EXPECT_NEAR(actual.sum_squares, expected.sum_squares, tolerance);
  }
}

void expect_same_stats(const at::Tensor& tensor, const std::string& what) {
  SCOPED_TRACE(what);
  expect_equal_stats(compute_tensor_stats(tensor), reference_stats(tensor));
}

at::Tensor crafted_values(at::ScalarType type) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {0.0,   -0.0,   1.0,    -2.5,  3.0e-5, 6.0e-8, 1e-8,   1e-12, 7e4,
                                -1e5,  65504., 65520., 144000, inf,   -inf,   1.5,    -7.25, 1e-39,
                                1e-41, 1e-44,  1e38,   -3e38, 2.0,    1e-6,   0.3333, 1e-3};
  values.push_back(std::nan(""));
  if (type == at::kDouble) {
    values.push_back(1e300);
    values.push_back(1e-300);
  }
  return at::tensor(values, at::kDouble).to(type);
}

TEST(TensorStats, CraftedValuesInEveryDtype) {
  for (const auto type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    expect_same_stats(crafted_values(type), c10::toString(type));
  }
}

TEST(TensorStats, NegativeZeroIsZeroAndNanIsNotAValue) {
  const auto stats = compute_tensor_stats(at::tensor({-0.0f, 0.0f, std::nanf("")}));
  EXPECT_EQ(stats.zero_count, 2);
  EXPECT_EQ(stats.nan_count, 1);
  EXPECT_EQ(stats.finite_nonzero_count(), 0);
  EXPECT_TRUE(std::isinf(stats.min_abs_nonzero));
  EXPECT_EQ(stats.max_abs, 0.0);
}

TEST(TensorStats, Fp32SubnormalsAreCounted) {
  const float subnormal = std::numeric_limits<float>::denorm_min() * 1000;
  expect_same_stats(at::tensor({subnormal, -subnormal, 1.0f}), "fp32 subnormal");
  EXPECT_EQ(compute_tensor_stats(at::tensor({subnormal})).bf16_flush, 1);
}

TEST(TensorStats, NonContiguousLayouts) {
  at::manual_seed(1);
  const at::Tensor base = at::randn({64, 48}) * 1000;
  expect_same_stats(base.t(), "transposed");
  expect_same_stats(base.slice(1, 3, 40, 3), "strided slice");
  expect_same_stats(base.index({at::indexing::Slice(), 5}), "column");
  expect_same_stats(at::randn({3, 1, 5}).expand({3, 7, 5}), "expanded (stride 0)");
  expect_same_stats(at::randn({4, 5, 6}).permute({2, 0, 1}).to(at::kHalf), "permuted half");
  expect_same_stats(at::randn({4, 6}).to(at::kBFloat16).t(), "transposed bfloat16");
  expect_same_stats(at::randn({}), "scalar");
}

TEST(TensorStats, LargeTensorsSplitAcrossThreadsAgree) {
  at::manual_seed(2);
  at::Tensor values = at::randn({1 << 20}) * at::exp(at::randn({1 << 20}) * 8);
  values.index_put_({at::indexing::Slice(0, 1000)}, std::numeric_limits<float>::infinity());
  values.index_put_({at::indexing::Slice(5000, 5100)}, std::nanf(""));
  expect_same_stats(values, "one long row");
  expect_same_stats(values.view({1024, 1024}).t(), "long transposed");
  expect_same_stats(values.view({1 << 17, 8}).slice(1, 0, 5), "many short rows");
}

// The kernel reads whole blocks of 2048 ordinary values (zero, or magnitudes in [2^-60, 2^60))
// on a vector path that derives most counts from each element's exponent field, and any other
// block element by element: each block here holds the edge values of one rule or one of the
// values that sends its block down the other path, among ordinary values.
TEST(TensorStats, EdgeValuesInsideLongBlocksAgree) {
  constexpr int64_t kBlock = 2048;
  const float two_pow_minus_25 = std::ldexp(1.0f, -25), two_pow_minus_14 = std::ldexp(1.0f, -14);
  const std::vector<std::vector<float>> edges_per_block = {
      {65504.0f, 65505.0f, 65520.0f, -65536.0f, two_pow_minus_25, std::nextafter(two_pow_minus_25, 1.0f),
       std::nextafter(two_pow_minus_25, 0.0f), two_pow_minus_14, -std::nextafter(two_pow_minus_14, 0.0f), 0.0f,
       -0.0f, std::ldexp(1.0f, -60), std::nextafter(std::ldexp(1.0f, 60), 0.0f), 1e-9f},
      {},                                                    // ordinary values only
      {std::ldexp(1.0f, -61)},                               // below the vector path's range
      {-std::ldexp(1.0f, 60)},                               // at its upper bound, excluded
      {std::numeric_limits<float>::denorm_min() * 3},        // an fp32 subnormal
      {std::numeric_limits<float>::infinity()},
      {std::nanf("")},
      {3.0e38f, -1e38f},                                     // above bf16's max
      // Alone in a block of ordinary values, each sets the block's largest or smallest
      // magnitude, which decides whether the fp16 limits are counted again.
      {std::nextafter(65504.0f, 1e9f)},                      // just above fp16's max
      {-65504.0f},                                           // at it, not above
      {two_pow_minus_25},                                    // at the flush limit: flushes
      {std::nextafter(two_pow_minus_25, 1.0f)},              // just above it: does not
  };
  at::manual_seed(4);
  const int64_t blocks = static_cast<int64_t>(edges_per_block.size()) + 1;  // the last one all zeros
  // Long enough that a chunk holds every block, with ordinary blocks after them.
  at::Tensor values = at::randn({40 * kBlock + 100}) * 100;
  values.slice(0, (blocks - 1) * kBlock, blocks * kBlock).zero_();
  for (size_t block = 0; block < edges_per_block.size(); ++block) {
    for (size_t k = 0; k < edges_per_block[block].size(); ++k) {
      values[static_cast<int64_t>(block) * kBlock + 7 + 131 * static_cast<int64_t>(k)] = edges_per_block[block][k];
    }
  }
  const int threads = at::get_num_threads();  // 1 under TSan (OMP_NUM_THREADS=1: libgomp is not instrumented)
  at::set_num_threads(1);  // one chunk: every block starts at a multiple of 2048
  expect_same_stats(values, "float, one thread");
  expect_same_stats(values.to(at::kHalf), "half, one thread");
  expect_same_stats(values.to(at::kBFloat16), "bfloat16, one thread");
  at::set_num_threads(threads);
  expect_same_stats(values, "float, default threads");
  expect_same_stats(values.slice(0, 33), "float, blocks shifted by 33");
  expect_same_stats(values.to(at::kBFloat16).slice(0, 33), "bfloat16, blocks shifted by 33");
  expect_same_stats(values.slice(0, 3 * kBlock + 5), "float, a short chunk");
  // Every element in its own class between 2^-60 and 2^60, through the vector path.
  const at::Tensor binades = at::pow(2.0, at::arange(-60, 60, at::kFloat)).repeat({20});
  expect_same_stats(binades, "one value per binade");
  // Every element in one binade: the most any count in a block can reach (2048 of one field).
  expect_same_stats(at::full({3 * kBlock}, -1.5f), "one value repeated");
}

// The vector path reads a block again for its exact largest or smallest magnitude only where the
// block's largest or smallest binade reaches the one seen so far: a later block whose extreme lies
// in the same binade as an earlier one's, but beyond it, must still set the extreme.
TEST(TensorStats, ExtremesInTheSameBinadeInALaterBlock) {
  constexpr int64_t kBlock = 2048;
  at::Tensor values = at::full({4 * kBlock}, 1.5f);
  values[5] = 1.25f;
  values[6] = 1.625f;
  values[2 * kBlock + 9] = -1.125f;
  values[2 * kBlock + 10] = -1.875f;
  values[3 * kBlock + 1] = 1.375f;
  values[3 * kBlock + 2] = 1.75f;
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // one chunk, read block after block
  const TensorStats stats = compute_tensor_stats(values);
  const TensorStats bfloat16_stats = compute_tensor_stats(values.to(at::kBFloat16));  // read as it is
  at::set_num_threads(threads);
  for (const TensorStats& read : {stats, bfloat16_stats}) {
    EXPECT_EQ(read.min_abs_nonzero, 1.125);
    EXPECT_EQ(read.max_abs, 1.875);
  }
  expect_same_stats(values, "default threads");
}

// fp32 subnormals share zeros' exponent field. A block with zeros (every block of a ReLU's output)
// is not read again to rule them out: on x86 the denormal-operand flag, raised by the block's
// sums, tells. A subnormal among such zeros must still send its block down the element-by-element
// path, after blocks with zeros and after one without, and with flush-denormal mode (DAZ) on, where
// the flag stays down and the block is read again; the blocks around it keep their exact counts.
at::Tensor relu_blocks_with_subnormals() {
  constexpr int64_t kBlock = 2048;
  at::manual_seed(11);
  at::Tensor values = at::relu(at::randn({6 * kBlock + 6 * 37}));
  // Blocks 2 and 4 hold no magnitude below those of blocks 0 and 1, so only a subnormal needs
  // their smallest non-zero magnitude: without one, they are not read again at all.
  for (const int64_t block : {2, 4}) {
    at::Tensor part = values.slice(0, block * kBlock, (block + 1) * kBlock);
    part.copy_((part > 0) * (1 + at::rand({kBlock})));
  }
  values[2 * kBlock + 100] = std::ldexp(1.0f, -133);   // after two blocks with zeros
  values[4 * kBlock + 7] = -std::ldexp(1.5f, -128);    // after one block with none (block 3, made positive)
  values.slice(0, 3 * kBlock, 4 * kBlock).add_(0.5);
  values[6 * kBlock + 5] = std::ldexp(1.25f, -127);    // among the last 222, read partly element by element
  return values;
}

TEST(TensorStats, SubnormalsAmongAReluOutputsZeros) {
  const at::Tensor values = relu_blocks_with_subnormals();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // one chunk, read block after block
  for (const bool flush_denormal : {false, true}) {
    for (const at::Tensor& read : {values, values.to(at::kBFloat16)}) {
      // Rows of 2084, 2085 apart: each row's last 36 elements are read element by element.
      for (const at::Tensor& layout : {read, read.view({6, 2085}).slice(1, 0, 2084)}) {
        const std::string what = std::string(read.scalar_type() == at::kFloat ? "float" : "bfloat16") +
                                 (layout.is_contiguous() ? "" : ", rows") +
                                 (flush_denormal ? ", flush-denormal mode" : "");
        SCOPED_TRACE(what);
        // The reference converts to double through ATen, which reads subnormals as zero in
        // flush-denormal mode: it is taken outside it.
        const TensorStats expected = reference_stats(layout);
        if (flush_denormal && !at::globalContext().setFlushDenormal(true)) continue;  // not on this CPU
        const TensorStats actual = compute_tensor_stats(layout);
        at::globalContext().setFlushDenormal(false);
        expect_equal_stats(actual, expected);
        EXPECT_EQ(actual.min_abs_nonzero, std::ldexp(1.0, -133));
        EXPECT_EQ(actual.bf16_subnormal, 3);
      }
    }
  }
  at::set_num_threads(threads);
  expect_same_stats(values, "float, default threads");
}

#if defined(__x86_64__) || defined(__i386__)
// The kernel reads and clears the thread's denormal-operand flag: it must leave the thread's MXCSR
// control bits (rounding, flush-denormal mode, exception masks) as the training set them, and every
// flag the training had raised still raised.
TEST(TensorStats, LeavesTheThreadsFloatingPointStateAsItWas) {
  const at::Tensor values = relu_blocks_with_subnormals();
  const std::vector<at::Tensor> reads = {values, values.to(at::kBFloat16), values.to(at::kHalf),
                                         values.view({6, 2085}).slice(1, 0, 2084)};
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // the chunk runs on this thread
  const unsigned original = _mm_getcsr();
  constexpr unsigned kFlags = 0x3f, kDenormalOperand = 1u << 1, kDenormalsAreZeros = 1u << 6;
  for (const unsigned flags : {0u, kDenormalOperand, kFlags}) {
    for (const unsigned daz : {0u, kDenormalsAreZeros}) {
      _mm_setcsr((original & ~kFlags & ~kDenormalsAreZeros) | flags | daz);
      const unsigned before = _mm_getcsr();
      for (const at::Tensor& read : reads) compute_tensor_stats(read);
      const unsigned after = _mm_getcsr();
      EXPECT_EQ(after & ~kFlags, before & ~kFlags) << "flags before: " << flags << ", DAZ " << daz;
      EXPECT_EQ(after & flags, flags) << "flags before: " << flags << ", DAZ " << daz;
    }
  }
  _mm_setcsr(original);
  at::set_num_threads(threads);
}
#endif

#ifdef __GLIBC__
// A training may trap on floating-point exceptions to find where a NaN starts. The kernel's lanes
// add a block's values before the block is turned away for holding infinities: +inf and -inf
// in one lane is an invalid operation, which must not raise SIGFPE in the training's thread.
TEST(TensorStats, InfinitiesOfBothSignsDoNotTrapATrainingThatTraps) {
  at::Tensor values = at::randn({3 * 2048});
  values[5] = std::numeric_limits<float>::infinity();
  values[5 + 64] = -std::numeric_limits<float>::infinity();  // the same accumulator lane
  values[2048 + 9] = std::numeric_limits<float>::max();
  values[2048 + 9 + 64] = std::numeric_limits<float>::max();  // squares overflow float
  const at::Tensor bfloat16_values = values.to(at::kBFloat16);  // float's max rounds to infinity
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // the chunk runs on this thread, which traps
  constexpr int kTraps = FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW;
  feenableexcept(kTraps);
  const TensorStats stats = compute_tensor_stats(values);
  const TensorStats bfloat16_stats = compute_tensor_stats(bfloat16_values);
  const int traps_after = fegetexcept();
  fedisableexcept(FE_ALL_EXCEPT);
  at::set_num_threads(threads);
  EXPECT_EQ(traps_after, kTraps) << "the kernel must leave the training's traps as they were";
  expect_equal_stats(stats, reference_stats(values));
  expect_equal_stats(bfloat16_stats, reference_stats(bfloat16_values));
  EXPECT_EQ(stats.inf_count, 2);
}
#endif

// The transposing copy counts a block's exponent fields in its loop, in a window of 16 fields
// guessed from the block before, and counts the fields the guess missed afterwards: one by one
// where they are few, by windows below and above it where they are many or zeros hide among
// them. Blocks of 2048 here move their fields against the block before in each of those ways;
// nearly every field is inside the histogram's range, so a field counted twice or missed shows
// in it.
TEST(TensorStats, BlocksWhoseFieldsLeaveTheBlockBeforesAgree) {
  constexpr int64_t kBlock = 2048;
  at::manual_seed(8);
  // Magnitudes in [2^low, 2^(high + 1)), spread over the binades, with random signs.
  const auto spread = [](int64_t count, int low, int high) {
    const at::Tensor exponents = at::randint(low, high + 1, {count}, at::kFloat);
    const at::Tensor signs = at::randint(0, 2, {count}, at::kFloat) * 2 - 1;
    return at::pow(2.0, exponents) * (1 + at::rand({count})) * signs;
  };
  const auto block_of = [&](int low, int high) { return spread(kBlock, low, high); };
  const auto with = [](at::Tensor block, const at::Tensor& others, int64_t first) {
    block.slice(0, first, first + others.numel()).copy_(others);
    return block;
  };
  const std::vector<std::pair<std::string, at::Tensor>> blocks = {
      {"eleven fields", block_of(0, 10)},
      {"a few far below and above", with(block_of(0, 10), at::cat({spread(5, -20, -20), spread(3, 14, 14)}), 100)},
      {"many below", with(block_of(0, 10), spread(100, -12, -4), 300)},
      {"many above", with(block_of(0, 10), spread(100, 11, 15), 700)},
      {"zeros and a few below", with(with(block_of(0, 10), at::zeros({500}), 0), spread(3, -20, -20), 1000)},
      {"all below the last window", block_of(-22, -12)},
      {"all zeros", at::zeros({kBlock})},
      {"back up after zeros", block_of(0, 10)},
      {"forty fields", block_of(-24, 15)},
      {"after a block wider than a window", block_of(0, 10)},
      {"sixteen fields", block_of(-5, 10)},
      {"after sixteen fields", block_of(-5, 10)},
      {"one field", block_of(3, 3)},
      {"a field either side of the last", block_of(2, 4)},
      {"eleven fields again", block_of(0, 10)},
      // 2^-58's field is 64 below 2^6's, inside the last block's window.
      {"a few 64 fields below the last window", with(block_of(0, 10), spread(4, -58, -58), 50)},
  };
  std::vector<at::Tensor> parts;
  for (const auto& block : blocks) {
    SCOPED_TRACE(block.first);
    ASSERT_EQ(block.second.numel(), kBlock);
    parts.push_back(block.second);
  }
  const at::Tensor values = at::cat(parts);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);  // one chunk: each block follows the one before
  expect_same_stats(values, "float, one thread");
  expect_same_stats(values.to(at::kBFloat16), "bfloat16, one thread");
  expect_same_stats(values.slice(0, 1000), "float, blocks straddling two of the above");
  at::set_num_threads(threads);
  expect_same_stats(values, "float, default threads");
  for (const auto& block : blocks) expect_same_stats(block.second.repeat({3}), block.first + ", three in a row");
}

// CTest runs these tests once per MPNANNY_STATS_ISA cap: each run must test the copy it names,
// or a copy below it on a CPU without that one's instructions.
TEST(TensorStats, TheInstructionSetCapPicksTheCopyItNames) {
  const std::vector<std::string> copies = {"baseline", "avx2", "avx512", "avx512-transpose"};
  const auto rank = [&](const std::string& copy) {
    return std::find(copies.begin(), copies.end(), copy) - copies.begin();
  };
  const std::string running = stat_kernel_copy();
  ASSERT_LT(rank(running), static_cast<std::ptrdiff_t>(copies.size())) << running;
  const char* cap = std::getenv("MPNANNY_STATS_ISA");
  if (!cap || !*cap) return;
  ASSERT_LT(rank(cap), static_cast<std::ptrdiff_t>(copies.size())) << "unknown cap " << cap;
  EXPECT_LE(rank(running), rank(cap));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  const bool has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  const bool has_cap = std::string(cap) == "baseline" ||
                       (std::string(cap) == "avx2" && __builtin_cpu_supports("avx2")) ||
                       (std::string(cap) == "avx512" && has_avx512);
  if (has_cap) EXPECT_EQ(running, cap);
#endif
}

// Each thread keeps its counters between calls and leaves them zero after each one: a call that
// left a count behind would show in the calls after it.
TEST(TensorStats, CallsInARowOnOneThreadDoNotLeakCounts) {
  at::manual_seed(5);
  const std::vector<at::Tensor> tensors = {
      crafted_values(at::kFloat),     at::randn({70000}) * 1e3,           crafted_values(at::kHalf),
      at::randn({5000}).abs() + 1e-3, crafted_values(at::kBFloat16),      at::zeros({300}),
      at::randn({64, 33}).t(),        at::full({129}, std::nanf("")),
  };
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < tensors.size(); ++i) expect_same_stats(tensors[i], "tensor " + std::to_string(i));
  }
}

TEST(L2Distance, AgreesWithATenInEveryDtypeAndLayout) {
  at::manual_seed(6);
  const at::Tensor before = at::randn({37, 129}) * 10;
  const at::Tensor after = before + at::randn({37, 129}) * 0.01;
  for (const auto type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    const at::Tensor a = after.to(type), b = before.to(type);
    const double expected = a.to(at::kDouble).dist(b.to(at::kDouble)).item<double>();
    EXPECT_NEAR(l2_distance(a, b), expected, 1e-9 * expected) << c10::toString(type);
    // Strided tensors go through ATen's dist (which adds half and bfloat16 in their own precision).
    EXPECT_DOUBLE_EQ(l2_distance(a.t(), b.t()), a.t().dist(b.t()).item<double>()) << c10::toString(type);
  }
  EXPECT_EQ(l2_distance(before, before), 0.0);
  EXPECT_TRUE(std::isnan(l2_distance(before, at::randn({3}))));  // shapes that do not broadcast
}

TEST(TensorStats, UnsupportedAndEmptyTensorsGiveEmptyStats) {
  EXPECT_EQ(compute_tensor_stats(at::Tensor()).numel, 0);
  EXPECT_EQ(compute_tensor_stats(at::ones({4}, at::kLong)).numel, 0);
  EXPECT_EQ(compute_tensor_stats(at::ones({0, 3})).numel, 0);
  EXPECT_FALSE(is_observable_tensor(at::ones({2}, at::kBool)));
}

// A sparse COO tensor is read as what it stores, values at one index added first (a sparse
// Embedding's gradient repeats the rows of repeated tokens); a complex one as its real and
// imaginary parts, which fp16 holds each on its own. Neither comes back empty, which the gradient
// rules would take for a zero gradient.
TEST(TensorStats, SparseTensorsAreTheirCoalescedValuesAndComplexOnesTheirParts) {
  const at::Tensor indices = at::tensor({0, 2, 0}, at::kLong).unsqueeze(0);
  const at::Tensor values = at::tensor({1.0f, -2.0f, 3.0f, 0.0f, 70000.0f, 4.0f}).view({3, 2});
  const TensorStats stored = compute_tensor_stats(at::sparse_coo_tensor(indices, values, {5, 2}));
  EXPECT_EQ(stored.numel, 4);  // rows 0 (70001, 2) and 2 (3, 0)
  EXPECT_EQ(stored.zero_count, 1);
  EXPECT_EQ(stored.max_abs, 70001.0);
  EXPECT_EQ(stored.fp16_overflow, 1);
  EXPECT_NEAR(stored.sum_squares, 70001.0 * 70001.0 + 4.0 + 9.0, 70001.0 * 70001.0 * 2e-6);
  EXPECT_EQ(compute_tensor_stats(at::sparse_coo_tensor(std::vector<int64_t>{1, 2}, at::TensorOptions().dtype(at::kFloat))).numel, 0);  // stores nothing

  const at::Tensor complex = at::complex(at::tensor({3.0f, 0.0f}), at::tensor({-4.0f, 1e-30f}));
  const TensorStats parts = compute_tensor_stats(complex);
  EXPECT_EQ(parts.numel, 4);
  EXPECT_EQ(parts.zero_count, 1);
  EXPECT_EQ(parts.max_abs, 4.0);
  EXPECT_EQ(parts.fp16_flush, 1);  // 1e-30 is 0 in fp16
  EXPECT_DOUBLE_EQ(parts.norm(), 5.0);
  EXPECT_DOUBLE_EQ(parts.sum, -1.0);
  EXPECT_DOUBLE_EQ(compute_tensor_stats(complex.conj()).sum, 7.0);  // a lazy conjugate, resolved
  EXPECT_EQ(compute_tensor_stats(at::complex(at::ones({3}, at::kDouble), at::ones({3}, at::kDouble))).numel, 6);
}

TEST(TensorStats, MeanAndNormCoverFiniteValues) {
  const auto stats = compute_tensor_stats(at::tensor({3.0f, 4.0f, std::numeric_limits<float>::infinity()}));
  EXPECT_DOUBLE_EQ(stats.norm(), 5.0);
  EXPECT_DOUBLE_EQ(stats.mean(), 3.5);
}

// One thread, so that a single chunk holds more than 2^24 elements and the kernel folds its
// per-exponent counters into the histogram mid-run; a fold that lost or doubled counts shows here
// (every other test folds only once, at the end of a chunk).
TEST(TensorStats, ChunksLongerThanTheFoldIntervalAgree) {
  at::set_num_threads(1);
  at::manual_seed(3);
  const at::Tensor values = at::randn({(int64_t{1} << 24) + 4099}) * 300;
  expect_same_stats(values, "2^24 + 4099 elements in one chunk");
}

}  // namespace
}  // namespace mpnanny
