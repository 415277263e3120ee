// Alert rules over tensor statistics: the fixed limits, the robust adaptive baseline and the
// loss-scale monitor. Pure functions and small state machines, so each rule is unit-tested alone.
#ifndef MPNANNY_CHECKER_H
#define MPNANNY_CHECKER_H

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "mpnanny/Alert.h"
#include "mpnanny/TensorStats.h"

namespace mpnanny {

/// Alert limits; the defaults are quiet on healthy fp32 training judged against fp16.
struct AlertThresholds {
  /// OVERFLOW_RISK when max |x| exceeds max_finite / overflow_risk_factor.
  double overflow_risk_factor = 2.0;
  /// UNDERFLOW when at least this share of the finite non-zero values falls below the smallest
  /// normal of the target precision...
  double underflow_share = 0.10;
  /// ...and at least this many values do (a single tiny softmax probability is not a problem).
  int64_t underflow_min_count = 16;
  /// GRAD_EXPLOSION when an unscaled parameter gradient's L2 norm exceeds this.
  double grad_explosion_norm = 1e4;
  /// GRAD_VANISH when an unscaled parameter gradient's L2 norm is below this.
  double grad_vanish_norm = 1e-8;
  /// SWAMPING when at least this share of a reduction's non-zero inputs is at most half an ulp
  /// of the result in the target precision (each such addend is rounded away)...
  double swamping_share = 0.25;
  /// ...and the reduction has at least this many inputs.
  int64_t swamping_min_inputs = 64;
  /// LOSS_SCALE_COLLAPSE when the scale falls below this...
  double loss_scale_min = 1.0;
  /// ...or backs off this many times within loss_scale_collapse_window steps (16 % of them
  /// skipped), once a step has gone through: the backoffs of the scaler's first search, down from
  /// an initial scale too high for any step, do not count.
  int loss_scale_collapse_backoffs = 8;
  int64_t loss_scale_collapse_window = 50;
  /// Adaptive baseline: observations of a metric at one site before it can flag anything.
  int64_t adaptive_warmup = 100;
  /// Adaptive baseline: robust deviations (1.4826 * MAD of log2 values) beyond the median.
  double adaptive_k = 6.0;
  /// Adaptive baseline: the most recent observations kept per metric and site.
  int64_t adaptive_window = 256;
  /// Adaptive baseline: the smallest deviation in log2 units, so a metric that never moved does
  /// not flag every small change.
  double adaptive_min_deviation_log2 = 0.25;
  bool adaptive_enabled = true;
};

/// A rule's verdict before it is attributed to a site and a step.
struct Finding {
  AlertType type;
  Severity severity;
  double value;
  double threshold;
  std::string message;
  bool adaptive = false;
};

const FormatLimits& limits_of(Precision precision);

/// NAN, INF, OVERFLOW, OVERFLOW_RISK and (when `check_underflow`) UNDERFLOW for one tensor.
/// `stored_in_target_precision`: the tensor already is fp16/bf16, so an Inf in it is the
/// overflow itself and is reported as OVERFLOW rather than INF.
std::vector<Finding> check_values(const TensorStats& stats, Precision precision, const AlertThresholds& thresholds,
                                  bool check_underflow, bool stored_in_target_precision);

/// SWAMPING for a sum-like reduction: `input` the reduced tensor, `largest_result` the largest
/// |partial sum| the reduction produced (its max |output|, times the element count for a mean).
std::optional<Finding> check_swamping(const TensorStats& input, double largest_result, Precision precision,
                                      const AlertThresholds& thresholds);

/// GRAD_EXPLOSION / GRAD_VANISH on an unscaled gradient norm (fixed limits).
std::optional<Finding> check_gradient_norm(double unscaled_norm, const AlertThresholds& thresholds);

/// Robust baseline of one metric at one site: median and MAD of log2 values over a window.
/// The window is also kept sorted, so that the bound, asked for on every observation, costs a
/// walk over half the window rather than a copy and two selections of all of it.
class RobustBaseline {
 public:
  explicit RobustBaseline(const AlertThresholds& thresholds) : thresholds_(thresholds) {}
  /// The bound above which `value` is an outlier, once warmed up; nullopt while warming up.
  std::optional<double> upper_bound() const;
  /// Records a new observation (after judging it).
  void add(double value);
  int64_t observations() const { return observations_; }

 private:
  AlertThresholds thresholds_;
  std::deque<double> log2_values_;   // in arrival order, for the window
  std::vector<double> sorted_log2_;  // the same values, ascending
  int64_t observations_ = 0;
};

/// Follows the loss scale step by step: a decrease is a backoff (the step was skipped).
class LossScaleMonitor {
 public:
  explicit LossScaleMonitor(const AlertThresholds& thresholds) : thresholds_(thresholds) {}
  struct Observation {
    bool skipped = false;
    std::optional<Finding> finding;
  };
  Observation observe(int64_t step, double scale);

 private:
  AlertThresholds thresholds_;
  std::optional<double> previous_scale_;
  std::deque<int64_t> backoff_steps_;  // since the first step that went through
  bool found_working_scale_ = false;
};

}  // namespace mpnanny

#endif  // MPNANNY_CHECKER_H
