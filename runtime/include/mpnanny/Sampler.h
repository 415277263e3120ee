// Which steps are traced: step 0 (and the first step seen), every `trace_interval` steps, and
// every step for `dense_steps` steps after an ERROR.
#ifndef MPNANNY_SAMPLER_H
#define MPNANNY_SAMPLER_H

#include <cstdint>
#include <optional>

namespace mpnanny {

class Sampler {
 public:
  /// `trace_interval` <= 0 turns periodic tracing off (step 0 and dense windows remain).
  Sampler(int64_t trace_interval, int64_t dense_steps) : trace_interval_(trace_interval), dense_steps_(dense_steps) {}

  /// Decides whether `step` is traced; call once per step, in order.
  bool should_trace(int64_t step) {
    const bool first = !first_step_seen_;
    first_step_seen_ = true;
    if (first || step == 0) return true;
    if (in_dense_window(step)) return true;
    return trace_interval_ > 0 && step % trace_interval_ == 0;
  }

  /// True while `step` lies in the window opened by the last ERROR.
  bool in_dense_window(int64_t step) const {
    return last_error_step_ && step > *last_error_step_ && step <= *last_error_step_ + dense_steps_;
  }

  /// An ERROR at `step` traces the next `dense_steps` steps.
  void on_error(int64_t step) {
    if (!last_error_step_ || step > *last_error_step_) last_error_step_ = step;
  }

 private:
  int64_t trace_interval_;
  int64_t dense_steps_;
  bool first_step_seen_ = false;
  std::optional<int64_t> last_error_step_;
};

}  // namespace mpnanny

#endif  // MPNANNY_SAMPLER_H
