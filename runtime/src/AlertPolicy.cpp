#include "AlertPolicy.h"

#include <algorithm>

#include "mpnanny/Nanny.h"

namespace mpnanny {

namespace {

bool is_sum_like(const std::string& op) {
  return op == "aten::sum" || op == "aten::mean" || op == "aten::cumsum" || op == "aten::nansum";
}

/// NaN, Inf and overflow, and the risk of it: what a loss scaler handles, and what propagates.
bool is_value_error(const Finding& finding) {
  return finding.type == AlertType::Nan || finding.type == AlertType::Inf || finding.type == AlertType::Overflow ||
         finding.type == AlertType::OverflowRisk;
}

/// Values that went wrong, not only near it.
bool is_error_value(const Finding& finding) {
  return finding.type == AlertType::Nan || finding.type == AlertType::Inf || finding.type == AlertType::Overflow;
}

void drop_value_errors(std::vector<Finding>& findings) {
  findings.erase(std::remove_if(findings.begin(), findings.end(), is_value_error), findings.end());
}

}  // namespace

AlertPolicy::AlertPolicy(const Options& options, Sampler& sampler)
    : precision_(options.precision),
      thresholds_(options.thresholds),
      loss_scaled_(static_cast<bool>(options.loss_scale)),
      dense_window_agreed_(static_cast<bool>(options.process_group)),
      sampler_(sampler),
      loss_scale_monitor_(options.thresholds) {}

void AlertPolicy::begin_step(std::optional<double> loss_scale) {
  loss_scale_ = loss_scale;
  value_error_ = false;
  saw_nonfinite_ = false;
  skipped_ = false;
}

std::vector<Finding> AlertPolicy::judge_op_tensor(OpStats& stats, Phase phase, const std::string& op) const {
  const TensorStats& values = stats.tensor();
  const bool stored_in_target_precision = (precision_ == Precision::FP16 && stats.dtype() == at::kHalf) ||
                                          (precision_ == Precision::BF16 && stats.dtype() == at::kBFloat16);
  std::vector<Finding> findings =
      check_values(values, precision_, thresholds_, phase == Phase::Forward, stored_in_target_precision);
  if (phase == Phase::Backward && loss_scaled_) {
    // With loss scaling, overflowing backward tensors are how the scaler finds its scale: it
    // skips the step and backs off, which the loss-scale alerts report.
    drop_value_errors(findings);
  }
  if (std::any_of(findings.begin(), findings.end(), is_error_value) && input_already_bad(stats, phase)) {
    if (value_error_) {
      // Propagation, not origin: the op that first produced the bad values has been reported.
      drop_value_errors(findings);
    } else {
      // The bad values came from outside the observed ops (a batch holding Inf, a weight written
      // between steps): this op is the first place they show, so it is reported, saying so.
      for (Finding& finding : findings) {
        if (is_value_error(finding)) finding.message += " (already in the op's input)";
      }
    }
  }
  if (phase == Phase::Forward && is_sum_like(op) && stats.input_count() > 0) {
    const TensorStats& input = stats.input(0);
    double largest_result = values.max_abs;
    if (op == "aten::mean" && values.numel > 0) {
      largest_result *= static_cast<double>(input.numel) / static_cast<double>(values.numel);
    }
    if (auto swamping = check_swamping(input, largest_result, precision_, thresholds_)) findings.push_back(*swamping);
  }
  return findings;
}

bool AlertPolicy::input_already_bad(OpStats& stats, Phase phase) const {
  // A backward node's gradients are observed without the gradients that reached it: those were
  // bad if an op before it in this step already produced NaN, Inf or an overflow.
  if (phase == Phase::Backward) return value_error_;
  for (size_t index = 0; index < stats.input_count(); ++index) {
    const TensorStats& input = stats.input(index);
    const int64_t above = precision_ == Precision::FP16 ? input.fp16_overflow : input.bf16_overflow;
    if (input.nan_count > 0 || input.inf_count > 0 || above > 0) return true;
  }
  return false;
}

void AlertPolicy::judge_against_baseline(int32_t op_index, int64_t location_id, double max_abs,
                                         std::vector<Finding>& findings) {
  const uint64_t site_key = static_cast<uint64_t>(op_index) << 40 ^ static_cast<uint64_t>(location_id);
  auto& baseline = max_abs_baselines_.try_emplace(site_key, thresholds_).first->second;
  const bool fixed_fired = std::any_of(findings.begin(), findings.end(), [](const Finding& f) {
    return f.type == AlertType::Overflow || f.type == AlertType::OverflowRisk;
  });
  if (const auto bound = baseline.upper_bound(); bound && !fixed_fired && max_abs > *bound) {
    findings.push_back({AlertType::OverflowRisk, Severity::Warning, max_abs, *bound,
                        "max |x| jumped above its robust baseline (" + std::to_string(*bound) + ")", true});
  }
  baseline.add(max_abs);
}

std::optional<Finding> AlertPolicy::judge_weights(const TensorStats& weights) const {
  if ((weights.nan_count == 0 && weights.inf_count == 0) || saw_nonfinite_) return std::nullopt;
  const bool nan = weights.nan_count > 0;
  return Finding{nan ? AlertType::Nan : AlertType::Inf, Severity::Error,
                 static_cast<double>(nan ? weights.nan_count : weights.inf_count), 0.0,
                 nan ? "the weights hold NaN" : "the weights hold infinities"};
}

std::optional<Finding> AlertPolicy::judge_gradient(const std::string& name, const TensorStats& gradient) {
  if (gradient.nan_count > 0 || gradient.inf_count > 0) {
    // Non-finite gradients that follow a reported op, or that the scaler skipped, are not news.
    if (saw_nonfinite_ || skipped_) return std::nullopt;
    const bool nan = gradient.nan_count > 0;
    return Finding{nan ? AlertType::Nan : AlertType::Inf, Severity::Error,
                   static_cast<double>(nan ? gradient.nan_count : gradient.inf_count), 0.0,
                   nan ? "the gradient holds NaN" : "the gradient holds infinities"};
  }
  // Gradients come from autograd hooks as backward produced them: still multiplied by the loss
  // scale (a hand-rolled scaler unscales them in place only later).
  const double scale = loss_scale_ && *loss_scale_ > 0.0 ? *loss_scale_ : 1.0;
  const double unscaled_norm = gradient.norm() / scale;
  std::optional<Finding> finding = check_gradient_norm(unscaled_norm, thresholds_);
  auto& baseline = gradient_norm_baselines_.try_emplace(name, thresholds_).first->second;
  if (!finding) {
    if (const auto bound = baseline.upper_bound(); bound && unscaled_norm > *bound) {
      finding = Finding{AlertType::GradExplosion,
                        Severity::Error,
                        unscaled_norm,
                        *bound,
                        "gradient norm jumped above its robust baseline (" + std::to_string(*bound) + ")",
                        true};
    }
  }
  baseline.add(unscaled_norm);
  return finding;
}

LossScaleMonitor::Observation AlertPolicy::judge_loss_scale(int64_t step, double scale) {
  LossScaleMonitor::Observation observation = loss_scale_monitor_.observe(step, scale);
  skipped_ = observation.skipped;
  return observation;
}

void AlertPolicy::note_alert(const Finding& finding, Phase phase, int64_t step) {
  if (phase == Phase::Forward || phase == Phase::Backward) {
    if (is_error_value(finding)) value_error_ = true;
    if (finding.type == AlertType::Nan || finding.type == AlertType::Inf) saw_nonfinite_ = true;
  }
  // In a process group the ranks open the window together, when they agree (RankAgreement).
  if (finding.severity == Severity::Error && !dense_window_agreed_) sampler_.on_error(step);
}

}  // namespace mpnanny
