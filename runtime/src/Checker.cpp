#include "mpnanny/Checker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace mpnanny {

const FormatLimits& limits_of(Precision precision) { return precision == Precision::FP16 ? kFp16Limits : kBf16Limits; }

namespace {

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

}  // namespace

std::vector<Finding> check_values(const TensorStats& stats, Precision precision, const AlertThresholds& thresholds,
                                  bool check_underflow, bool stored_in_target_precision) {
  std::vector<Finding> findings;
  if (stats.numel == 0) return findings;
  const FormatLimits& limits = limits_of(precision);
  const char* format_name = to_string(precision);
  if (stats.nan_count > 0) {
    findings.push_back(
        {AlertType::Nan, Severity::Error, static_cast<double>(stats.nan_count), 0.0,
         format("%.0f NaN values of %.0f", static_cast<double>(stats.nan_count), static_cast<double>(stats.numel))});
  }
  const int64_t overflow_count = precision == Precision::FP16 ? stats.fp16_overflow : stats.bf16_overflow;
  if (stats.inf_count > 0 && !stored_in_target_precision) {
    findings.push_back({AlertType::Inf, Severity::Error, static_cast<double>(stats.inf_count), 0.0,
                        format("%.0f infinite values of %.0f", static_cast<double>(stats.inf_count),
                               static_cast<double>(stats.numel))});
  }
  const int64_t overflowed = overflow_count + (stored_in_target_precision ? stats.inf_count : 0);
  if (overflowed > 0) {
    const double shown = overflow_count > 0 ? stats.max_abs : INFINITY;
    findings.push_back({AlertType::Overflow, Severity::Error, shown, limits.max_finite,
                        format("%lld values above the largest finite %s value %g (max |x| = %g)",
                               static_cast<long long>(overflowed), format_name, limits.max_finite, shown)});
  } else if (stats.max_abs > limits.max_finite / thresholds.overflow_risk_factor) {
    findings.push_back({AlertType::OverflowRisk, Severity::Warning, stats.max_abs,
                        limits.max_finite / thresholds.overflow_risk_factor,
                        format("max |x| = %g is within %gx of the largest finite value %g", stats.max_abs,
                               thresholds.overflow_risk_factor, limits.max_finite)});
  }
  if (check_underflow) {
    const int64_t below_normal = precision == Precision::FP16 ? stats.fp16_subnormal + stats.fp16_flush
                                                              : stats.bf16_subnormal + stats.bf16_flush;
    const int64_t nonzero = stats.finite_nonzero_count();
    const double share = nonzero > 0 ? static_cast<double>(below_normal) / static_cast<double>(nonzero) : 0.0;
    if (below_normal >= thresholds.underflow_min_count && share >= thresholds.underflow_share) {
      findings.push_back({AlertType::Underflow, Severity::Warning, share, thresholds.underflow_share,
                          format("%.1f%% of the non-zero values (%.0f) are below the smallest normal %g", 100.0 * share,
                                 static_cast<double>(below_normal), limits.min_normal)});
    }
  }
  return findings;
}

std::optional<Finding> check_swamping(const TensorStats& input, double largest_result, Precision precision,
                                      const AlertThresholds& thresholds) {
  if (input.numel < thresholds.swamping_min_inputs || !(largest_result > 0.0) || !std::isfinite(largest_result)) {
    return std::nullopt;
  }
  const int mantissa_bits = limits_of(precision).mantissa_bits;
  // An addend of magnitude at most ulp(result)/2 rounds away when added to the result. The
  // histogram knows each element's binade [2^e, 2^(e+1)): the whole binade is lost when
  // 2^(e+1) <= ulp/2, i.e. e + 1 <= ulp_exponent - 1.
  const int lost_limit_exponent = ulp_exponent(static_cast<float>(largest_result), mantissa_bits) - 1;
  int64_t lost = 0;
  for (int bucket = 0; bucket < kHistogramBuckets; ++bucket) {
    const int binade_top = bucket == 0 ? kHistogramMinExponent : histogram_bucket_exponent(bucket) + 1;
    if (binade_top <= lost_limit_exponent) lost += input.histogram[bucket];
  }
  const int64_t nonzero = input.finite_nonzero_count();
  if (nonzero == 0) return std::nullopt;
  const double share = static_cast<double>(lost) / static_cast<double>(nonzero);
  if (share < thresholds.swamping_share) return std::nullopt;
  return Finding{AlertType::Swamping, Severity::Warning, share, thresholds.swamping_share,
                 format("%.1f%% of the addends are below half an ulp (2^%.0f) of the result %g and are lost",
                        100.0 * share, static_cast<double>(lost_limit_exponent), largest_result)};
}

std::optional<Finding> check_gradient_norm(double unscaled_norm, const AlertThresholds& thresholds) {
  if (!std::isfinite(unscaled_norm)) return std::nullopt;  // NaN/Inf gradients are NAN/INF alerts
  if (unscaled_norm > thresholds.grad_explosion_norm) {
    return Finding{AlertType::GradExplosion, Severity::Error, unscaled_norm, thresholds.grad_explosion_norm,
                   format("gradient norm %g exceeds %g", unscaled_norm, thresholds.grad_explosion_norm)};
  }
  if (unscaled_norm < thresholds.grad_vanish_norm) {
    return Finding{AlertType::GradVanish, Severity::Warning, unscaled_norm, thresholds.grad_vanish_norm,
                   format("gradient norm %g is below %g", unscaled_norm, thresholds.grad_vanish_norm)};
  }
  return std::nullopt;
}

std::optional<double> RobustBaseline::upper_bound() const {
  if (!thresholds_.adaptive_enabled || observations_ < thresholds_.adaptive_warmup || sorted_log2_.empty()) {
    return std::nullopt;
  }
  const std::vector<double>& values = sorted_log2_;
  const size_t middle = values.size() / 2;
  const double median = values[middle];
  // The deviations |x - median| are two ascending runs, median - x leftwards from the middle and
  // x - median rightwards from it; their merge's element `middle` is the MAD's median (the same
  // element a selection over all deviations picks).
  size_t left = middle, right = middle;  // next candidates: values[left - 1], values[right]
  double deviation_at_middle = 0.0;
  for (size_t taken = 0; taken <= middle; ++taken) {
    const bool take_left = left > 0 && (right >= values.size() || median - values[left - 1] <= values[right] - median);
    deviation_at_middle = take_left ? median - values[--left] : values[right++] - median;
  }
  const double deviation = std::max(1.4826 * deviation_at_middle, thresholds_.adaptive_min_deviation_log2);
  return std::exp2(median + thresholds_.adaptive_k * deviation);
}

void RobustBaseline::add(double value) {
  if (!(value > 0.0) || !std::isfinite(value)) return;  // log2 is defined for positive values only
  const double log2_value = std::log2(value);
  log2_values_.push_back(log2_value);
  sorted_log2_.insert(std::upper_bound(sorted_log2_.begin(), sorted_log2_.end(), log2_value), log2_value);
  if (static_cast<int64_t>(log2_values_.size()) > thresholds_.adaptive_window) {
    sorted_log2_.erase(std::lower_bound(sorted_log2_.begin(), sorted_log2_.end(), log2_values_.front()));
    log2_values_.pop_front();
  }
  ++observations_;
}

LossScaleMonitor::Observation LossScaleMonitor::observe(int64_t step, double scale) {
  Observation result;
  const bool backed_off = previous_scale_ && scale < *previous_scale_;
  if (previous_scale_ && !backed_off) found_working_scale_ = true;
  previous_scale_ = scale;
  if (backed_off) {
    result.skipped = true;
    // Backing off from an initial scale that is too high, before any step went through, is the
    // scaler's search for a working scale (GradScaler starts at 65536 and commonly skips a few
    // steps): those backoffs are drops, never a collapse.
    if (found_working_scale_) backoff_steps_.push_back(step);
  }
  while (!backoff_steps_.empty() && backoff_steps_.front() <= step - thresholds_.loss_scale_collapse_window) {
    backoff_steps_.pop_front();
  }
  const int64_t recent_backoffs = static_cast<int64_t>(backoff_steps_.size());
  if (scale < thresholds_.loss_scale_min) {
    result.finding = Finding{AlertType::LossScaleCollapse, Severity::Error, scale, thresholds_.loss_scale_min,
                             format("loss scale %g fell below %g", scale, thresholds_.loss_scale_min)};
  } else if (backed_off && recent_backoffs >= thresholds_.loss_scale_collapse_backoffs) {
    result.finding =
        Finding{AlertType::LossScaleCollapse, Severity::Error, static_cast<double>(recent_backoffs),
                static_cast<double>(thresholds_.loss_scale_collapse_backoffs),
                format("loss scale backed off %.0f times within %.0f steps after it had found a working scale (now %g)",
                       static_cast<double>(recent_backoffs),
                       static_cast<double>(thresholds_.loss_scale_collapse_window), scale)};
  } else if (backed_off) {
    result.finding = Finding{AlertType::LossScaleDrop, Severity::Warning, scale, 0.0,
                             format("loss scale backed off to %g: the step was skipped", scale)};
  }
  return result;
}

}  // namespace mpnanny
