// Unit tests of the pieces with no LibTorch in them: element classification, sampler, alert
// rules, adaptive baseline, loss-scale monitor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "mpnanny/Checker.h"
#include "mpnanny/ElementClass.h"
#include "mpnanny/Sampler.h"

namespace mpnanny {
namespace {

std::vector<AlertType> types_of(const std::vector<Finding>& findings) {
  std::vector<AlertType> types;
  for (const Finding& finding : findings) types.push_back(finding.type);
  return types;
}

TEST(ElementClass, Fp16BoundariesFollowTheFormat) {
  EXPECT_EQ(classify_magnitude(65504.0f).fp16_overflow, 0);
  EXPECT_EQ(classify_magnitude(65505.0f).fp16_overflow, 1);
  EXPECT_EQ(classify_magnitude(6.103515625e-05f).fp16_subnormal, 0);  // smallest normal
  EXPECT_EQ(classify_magnitude(6.0e-05f).fp16_subnormal, 1);
  EXPECT_EQ(classify_magnitude(5.9604645e-08f).fp16_subnormal, 1);  // smallest subnormal 2^-24
  EXPECT_EQ(classify_magnitude(2.98023223876953125e-08f).fp16_flush, 1);  // 2^-25 rounds to zero
  EXPECT_EQ(classify_magnitude(1e-8f).fp16_flush, 1);
  EXPECT_EQ(classify_magnitude(1e-8f).bf16_flush, 0);
  EXPECT_EQ(classify_magnitude(0.0f).is_zero, 1);
  EXPECT_EQ(classify_magnitude(0.0f).fp16_flush, 0);
  EXPECT_EQ(classify_magnitude(std::numeric_limits<float>::infinity()).is_inf, 1);
  EXPECT_EQ(classify_magnitude(std::numeric_limits<float>::infinity()).fp16_overflow, 0);
  EXPECT_EQ(classify_magnitude(std::nanf("")).is_nan, 1);
  EXPECT_EQ(classify_magnitude(std::nanf("")).bucket, -1);
}

TEST(ElementClass, Bf16AndDoubleBoundaries) {
  EXPECT_EQ(classify_magnitude(3.3e38f).bf16_overflow, 0);
  EXPECT_EQ(classify_magnitude(3.4e38f).bf16_overflow, 1);
  EXPECT_EQ(classify_magnitude(1e-39f).bf16_subnormal, 1);
  EXPECT_EQ(classify_magnitude(1e300).bf16_overflow, 1);
  EXPECT_EQ(classify_magnitude(1e300).is_inf, 0);
  EXPECT_EQ(classify_magnitude(1e-300).bf16_flush, 1);
  EXPECT_EQ(classify_magnitude(1e-300).bucket, 0);  // too small for float, still bucket 0
}

TEST(ElementClass, HistogramBucketsAreBinades) {
  EXPECT_EQ(histogram_bucket(1.0f), 1 - kHistogramMinExponent);  // [2^0, 2^1)
  EXPECT_EQ(histogram_bucket(1.99f), 1 - kHistogramMinExponent);
  EXPECT_EQ(histogram_bucket(2.0f), 2 - kHistogramMinExponent);
  EXPECT_EQ(histogram_bucket(std::ldexp(1.0f, kHistogramMinExponent)), 1);
  EXPECT_EQ(histogram_bucket(std::ldexp(1.0f, kHistogramMinExponent - 1)), 0);
  EXPECT_EQ(histogram_bucket(1e30f), kHistogramBuckets - 1);
  EXPECT_EQ(histogram_bucket(std::numeric_limits<float>::infinity()), kHistogramBuckets - 1);
  EXPECT_EQ(histogram_bucket_exponent(histogram_bucket(0.75f)), -1);
}

TEST(ElementClass, BitClassificationAgreesWithTheFloatOne) {
  // The kernels use classify_magnitude_bits; it must agree with the value-based rules everywhere.
  for (uint64_t bits = 0; bits <= 0x7fffffffu; bits += 4099) {
    const auto magnitude_bits = static_cast<uint32_t>(bits);
    float magnitude;
    std::memcpy(&magnitude, &magnitude_bits, sizeof magnitude);
    const ElementClass by_value = classify_magnitude(magnitude);
    const ElementClass by_bits = classify_magnitude_bits(magnitude_bits);
    ASSERT_EQ(std::memcmp(&by_value, &by_bits, sizeof by_value), 0) << std::hex << magnitude_bits;
  }
}

TEST(Sampler, TracesStepZeroPeriodicallyAndDenselyAfterAnError) {
  Sampler sampler(/*trace_interval=*/10, /*dense_steps=*/3);
  std::vector<int64_t> traced;
  for (int64_t step = 0; step < 40; ++step) {
    if (sampler.should_trace(step)) traced.push_back(step);
    if (step == 12) sampler.on_error(step);
  }
  EXPECT_EQ(traced, (std::vector<int64_t>{0, 10, 13, 14, 15, 20, 30}));
}

TEST(Sampler, FirstStepSeenIsTracedWhenResuming) {
  Sampler sampler(100, 50);
  EXPECT_TRUE(sampler.should_trace(1234));
  EXPECT_FALSE(sampler.should_trace(1235));
  EXPECT_TRUE(sampler.should_trace(1300));
}

TEST(Sampler, ZeroIntervalTracesOnlyStepZeroAndDenseWindows) {
  Sampler sampler(0, 2);
  EXPECT_TRUE(sampler.should_trace(0));
  EXPECT_FALSE(sampler.should_trace(1));
  sampler.on_error(1);
  EXPECT_TRUE(sampler.should_trace(2));
  EXPECT_TRUE(sampler.should_trace(3));
  EXPECT_FALSE(sampler.should_trace(4));
}

TensorStats stats_with(int64_t numel) {
  TensorStats stats;
  stats.numel = numel;
  return stats;
}

TEST(CheckValues, HealthyTensorRaisesNothing) {
  TensorStats stats = stats_with(1000);
  stats.max_abs = 12.0;
  stats.zero_count = 500;  // ReLU zeros are not underflow
  EXPECT_TRUE(check_values(stats, Precision::FP16, {}, true, false).empty());
}

TEST(CheckValues, NanInfOverflowAndRisk) {
  TensorStats stats = stats_with(100);
  stats.nan_count = 1;
  stats.inf_count = 2;
  stats.fp16_overflow = 3;
  stats.max_abs = 144000.0;
  EXPECT_EQ(types_of(check_values(stats, Precision::FP16, {}, true, false)),
            (std::vector<AlertType>{AlertType::Nan, AlertType::Inf, AlertType::Overflow}));
  // In a half tensor an infinity is the overflow itself.
  TensorStats half = stats_with(100);
  half.inf_count = 1;
  EXPECT_EQ(types_of(check_values(half, Precision::FP16, {}, true, true)),
            (std::vector<AlertType>{AlertType::Overflow}));
  TensorStats risky = stats_with(100);
  risky.max_abs = 40000.0;
  EXPECT_EQ(types_of(check_values(risky, Precision::FP16, {}, true, false)),
            (std::vector<AlertType>{AlertType::OverflowRisk}));
  EXPECT_TRUE(check_values(risky, Precision::BF16, {}, true, false).empty());
}

TEST(CheckValues, UnderflowNeedsShareAndCount) {
  TensorStats stats = stats_with(1000);
  stats.max_abs = 1.0;
  stats.fp16_flush = 200;
  EXPECT_EQ(types_of(check_values(stats, Precision::FP16, {}, true, false)),
            (std::vector<AlertType>{AlertType::Underflow}));
  EXPECT_TRUE(check_values(stats, Precision::FP16, {}, /*check_underflow=*/false, false).empty());
  EXPECT_TRUE(check_values(stats, Precision::BF16, {}, true, false).empty());
  stats.fp16_flush = 50;  // 5 %: below the default 10 % share
  EXPECT_TRUE(check_values(stats, Precision::FP16, {}, true, false).empty());
  TensorStats few = stats_with(10);
  few.fp16_subnormal = 10;  // all of them, but fewer than underflow_min_count
  EXPECT_TRUE(check_values(few, Precision::FP16, {}, true, false).empty());
}

TEST(CheckSwamping, SmallAddendsBelowHalfAnUlpAreLost) {
  TensorStats input = stats_with(512);
  input.histogram[histogram_bucket(2.0f)] = 256;
  input.histogram[histogram_bucket(1e-6f)] = 256;
  const auto finding = check_swamping(input, 512.000256, Precision::FP16, {});
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->type, AlertType::Swamping);
  EXPECT_DOUBLE_EQ(finding->value, 0.5);
  // bf16's ulp at 512 is 4: 2.0 is exactly half an ulp, but the binade [2, 4) is not wholly
  // lost; 1e-6 is, so the share is the same half.
  EXPECT_TRUE(check_swamping(input, 512.0, Precision::BF16, {}));
}

TEST(CheckSwamping, UniformAddendsAreFine) {
  TensorStats input = stats_with(512);
  input.histogram[histogram_bucket(1.0f)] = 512;
  EXPECT_FALSE(check_swamping(input, 512.0, Precision::FP16, {}));
  // 4096 ones in fp16: ulp(4096) = 4, each 1 is at most half an ulp, lost (stuck at 2048).
  TensorStats many = stats_with(4096);
  many.histogram[histogram_bucket(1.0f)] = 4096;
  EXPECT_TRUE(check_swamping(many, 4096.0, Precision::FP16, {}));
  TensorStats small = stats_with(10);
  small.histogram[histogram_bucket(1e-6f)] = 10;
  EXPECT_FALSE(check_swamping(small, 1000.0, Precision::FP16, {}));  // too few addends to matter
}

TEST(CheckGradientNorm, FixedLimits) {
  EXPECT_EQ(check_gradient_norm(22400.0, {})->type, AlertType::GradExplosion);
  EXPECT_EQ(check_gradient_norm(1e-9, {})->type, AlertType::GradVanish);
  EXPECT_FALSE(check_gradient_norm(0.5, {}));
  EXPECT_FALSE(check_gradient_norm(std::nan(""), {}));
}

TEST(RobustBaseline, FlagsOnlyAfterWarmUpAndBeyondKDeviations) {
  AlertThresholds thresholds;
  thresholds.adaptive_warmup = 20;
  RobustBaseline baseline(thresholds);
  for (int i = 0; i < 19; ++i) {
    baseline.add(1.0 + 0.1 * (i % 5));
    EXPECT_FALSE(baseline.upper_bound());
  }
  baseline.add(1.2);
  const auto bound = baseline.upper_bound();
  ASSERT_TRUE(bound);
  EXPECT_GT(*bound, 1.4);  // the observed spread is not an outlier
  EXPECT_LT(*bound, 10.0);  // a 10x jump is
}

// The bound against median and MAD computed from scratch over the last `window` values, as the
// window slides over values with ties and outliers.
TEST(RobustBaseline, BoundIsMedianPlusKMadsOfTheWindow) {
  AlertThresholds thresholds;
  thresholds.adaptive_warmup = 5;
  thresholds.adaptive_window = 37;
  thresholds.adaptive_min_deviation_log2 = 0.0;
  RobustBaseline baseline(thresholds);
  std::vector<double> seen;
  uint32_t state = 12345;
  for (int i = 0; i < 400; ++i) {
    state = state * 1664525u + 1013904223u;
    const int pick = static_cast<int>(state >> 24);
    const double value = pick % 7 == 0 ? 1024.0 : std::exp2((pick % 23) / 4.0);  // ties and jumps
    baseline.add(value);
    seen.push_back(std::log2(value));
    if (i + 1 < thresholds.adaptive_warmup) continue;
    std::vector<double> window(seen.end() - std::min<size_t>(seen.size(), thresholds.adaptive_window), seen.end());
    const size_t middle = window.size() / 2;
    std::nth_element(window.begin(), window.begin() + middle, window.end());
    const double median = window[middle];
    for (double& x : window) x = std::fabs(x - median);
    std::nth_element(window.begin(), window.begin() + middle, window.end());
    const double expected = std::exp2(median + thresholds.adaptive_k * (1.4826 * window[middle]));
    const auto bound = baseline.upper_bound();
    ASSERT_TRUE(bound) << "after " << i + 1;
    ASSERT_DOUBLE_EQ(*bound, expected) << "after " << i + 1;
  }
}

TEST(RobustBaseline, ConstantMetricUsesTheMinimumDeviation) {
  AlertThresholds thresholds;
  thresholds.adaptive_warmup = 5;
  RobustBaseline baseline(thresholds);
  for (int i = 0; i < 5; ++i) baseline.add(4.0);
  EXPECT_NEAR(*baseline.upper_bound(), 4.0 * std::exp2(6 * 0.25), 1e-9);
  thresholds.adaptive_enabled = false;
  RobustBaseline disabled(thresholds);
  for (int i = 0; i < 5; ++i) disabled.add(4.0);
  EXPECT_FALSE(disabled.upper_bound());
}

TEST(LossScaleMonitor, BackoffIsADropAndRepeatedBackoffsACollapse) {
  LossScaleMonitor monitor({});
  EXPECT_FALSE(monitor.observe(0, 65536).finding);
  EXPECT_FALSE(monitor.observe(1, 131072).finding);  // growth is fine: step 1 went through at 65536
  const auto drop = monitor.observe(2, 65536);
  EXPECT_TRUE(drop.skipped);
  ASSERT_TRUE(drop.finding);
  EXPECT_EQ(drop.finding->type, AlertType::LossScaleDrop);
  EXPECT_EQ(drop.finding->severity, Severity::Warning);
  double scale = 65536;
  for (int64_t step = 3; step <= 8; ++step) {  // the second to seventh backoffs within 50 steps
    scale /= 2;
    const auto observation = monitor.observe(step, scale);
    ASSERT_TRUE(observation.finding) << step;
    EXPECT_EQ(observation.finding->type, AlertType::LossScaleDrop) << step;
  }
  const auto collapse = monitor.observe(9, scale / 2);  // the eighth
  ASSERT_TRUE(collapse.finding);
  EXPECT_EQ(collapse.finding->type, AlertType::LossScaleCollapse);
  EXPECT_EQ(collapse.finding->severity, Severity::Error);
}

// GradScaler starts at 65536, usually too high, and halves it on each of the first steps until
// one goes through: a search, not a collapse, however many steps it takes above loss_scale_min.
TEST(LossScaleMonitor, TheFirstSearchForAWorkingScaleIsNoCollapse) {
  LossScaleMonitor monitor({});
  double scale = 65536;
  int64_t step = 0;
  EXPECT_FALSE(monitor.observe(step++, scale).finding);
  for (int backoff = 0; backoff < 6; ++backoff) {  // down to 1024
    scale /= 2;
    const auto observation = monitor.observe(step++, scale);
    EXPECT_TRUE(observation.skipped);
    ASSERT_TRUE(observation.finding);
    EXPECT_EQ(observation.finding->type, AlertType::LossScaleDrop) << "backoff " << backoff;
  }
  for (int ok = 0; ok < 100; ++ok) EXPECT_FALSE(monitor.observe(step++, scale).finding);
  // Once a scale worked, eight backoffs within 50 steps are the collapse the rule is for (down to
  // 4, still above loss_scale_min).
  for (int backoff = 1; backoff <= 8; ++backoff) {
    scale /= 2;
    const auto observation = monitor.observe(step++, scale);
    ASSERT_TRUE(observation.finding);
    EXPECT_EQ(observation.finding->type, backoff < 8 ? AlertType::LossScaleDrop : AlertType::LossScaleCollapse)
        << "backoff " << backoff;
  }
}

// The scale settling lower early in training (gradients grow), with steps going through between
// the backoffs: four drops in a few steps are the scaler doing its job.
TEST(LossScaleMonitor, AScaleThatSettlesLowerAfterAFewBackoffsIsNoCollapse) {
  LossScaleMonitor monitor({});
  double scale = 65536;
  for (int64_t step = 0; step < 200; ++step) {
    if (step == 10 || step == 13 || step == 14 || step == 16) scale /= 2;
    const auto observation = monitor.observe(step, scale);
    if (observation.finding) EXPECT_EQ(observation.finding->type, AlertType::LossScaleDrop) << step;
  }
}

TEST(LossScaleMonitor, ScaleBelowOneCollapses) {
  LossScaleMonitor monitor({});
  monitor.observe(0, 2.0);
  EXPECT_EQ(monitor.observe(1, 0.5).finding->type, AlertType::LossScaleCollapse);
}

TEST(LossScaleMonitor, SpacedBackoffsStayDrops) {
  LossScaleMonitor monitor({});
  double scale = 65536;
  for (int64_t step = 0; step < 400; ++step) {
    if (step % 100 == 99) scale /= 2;
    const auto observation = monitor.observe(step, scale);
    if (observation.finding) EXPECT_EQ(observation.finding->type, AlertType::LossScaleDrop);
  }
}

TEST(AlertNames, RoundTrip) {
  for (const AlertType type : alert_types()) {
    EXPECT_EQ(alert_type_from_string(to_string(type)), type);
  }
  EXPECT_FALSE(alert_type_from_string("BOGUS"));
}

}  // namespace
}  // namespace mpnanny
