// The alert policy: which of the rules' findings (Checker.h) become alerts, and what an alert
// changes. It applies the fixed rules to what the observer measured, drops what is not news
// (overflow a loss scaler handles, values that only propagate an error already reported), adds
// the adaptive baselines' findings, and opens the dense window an ERROR asks for. Nothing else in
// the runtime decides an alert.
#ifndef MPNANNY_RUNTIME_ALERTPOLICY_H
#define MPNANNY_RUNTIME_ALERTPOLICY_H

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "OpStats.h"
#include "mpnanny/Checker.h"
#include "mpnanny/Sampler.h"

namespace mpnanny {

struct Options;

/// One per session. Not locked itself: the session calls the members that say so with its lock
/// held, as every observation of a step passes through it.
class AlertPolicy {
 public:
  /// `sampler` decides which steps are traced; an ERROR opens its dense window.
  AlertPolicy(const Options& options, Sampler& sampler);

  /// A new step: forgets the last one's value errors; `loss_scale` is the scale read at its start,
  /// the one its backward pass multiplies gradients by.
  void begin_step(std::optional<double> loss_scale);

  /// An op's output (forward) or a gradient its backward node passes on (backward): the fixed
  /// rules, less what the loss scaler handles and what only propagates an error already reported,
  /// plus SWAMPING for a sum-like forward op. Reads the op's inputs (through `stats`) only where a
  /// rule needs them.
  std::vector<Finding> judge_op_tensor(OpStats& stats, Phase phase, const std::string& op) const;
  /// With the lock held: the adaptive baseline of max |x| of a forward op at one line
  /// (`op_index`, `location_id`), which then learns this value.
  void judge_against_baseline(int32_t op_index, int64_t location_id, double max_abs, std::vector<Finding>& findings);

  /// With the lock held: NaN or Inf in a parameter's weights, unless an op of this step already
  /// reported non-finite values.
  std::optional<Finding> judge_weights(const TensorStats& weights) const;
  /// With the lock held: a parameter's gradient, unscaled by the step's loss scale: NaN or Inf
  /// (unless already reported this step, or the scaler skipped it), the fixed norm limits, and
  /// the parameter's adaptive baseline, which then learns the norm.
  std::optional<Finding> judge_gradient(const std::string& name, const TensorStats& gradient);
  /// The loss scale at the end of a step: a decrease is a skipped step, which this step's
  /// gradient judgements then expect non-finite values of.
  LossScaleMonitor::Observation judge_loss_scale(int64_t step, double scale);

  /// With the lock held: `finding` was raised at `step`. An error in the values of a forward or
  /// backward tensor makes later ones of the step propagation; an ERROR traces the next steps
  /// (in a process group, once the ranks agree).
  void note_alert(const Finding& finding, Phase phase, int64_t step);

 private:
  /// Whether the op's inputs already held NaN, Inf or an overflow: for a backward node (whose
  /// incoming gradients are not observed), whether an op before it in this step produced them.
  bool input_already_bad(OpStats& stats, Phase phase) const;

  const Precision precision_;
  const AlertThresholds thresholds_;
  const bool loss_scaled_;
  const bool dense_window_agreed_;  // a process group: the agreement opens the dense window
  Sampler& sampler_;
  LossScaleMonitor loss_scale_monitor_;
  // Adaptive baselines: max |x| per (watched op, location), gradient norm per parameter.
  std::unordered_map<uint64_t, RobustBaseline> max_abs_baselines_;
  std::unordered_map<std::string, RobustBaseline> gradient_norm_baselines_;
  // The step's state. Read without the lock by judge_op_tensor on the op's thread.
  std::optional<double> loss_scale_;
  std::atomic<bool> value_error_{false};  // an op of this step produced NaN, Inf or an overflow
  bool saw_nonfinite_ = false;            // an op of this step produced NaN or Inf
  bool skipped_ = false;                  // the loss scaler skipped this step
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_ALERTPOLICY_H
