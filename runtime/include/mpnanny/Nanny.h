// mpnanny::Nanny: watches a LibTorch training loop for fp16/bf16 trouble while it runs.
//
//   mpnanny::Nanny nanny(model, {.trace_interval = 100, .output_dir = "nanny_logs"});
//   for (int64_t step = 0; ...; ++step) {
//     auto guard = nanny.step(step);
//     ... forward, loss.backward(), optimizer.step() ...
//   }
//   nanny.close();
//
// On traced steps it observes the outputs of the ATen ops worth watching (attributed to the
// user's source line), the gradients and weights of every parameter, the loss scale and memory,
// raises alerts (knowledge/alert-<TYPE>.md) and stores everything in <output_dir>/metrics.db.
// It never throws into training: an error becomes one warning and the nanny switches off.
#ifndef MPNANNY_NANNY_H
#define MPNANNY_NANNY_H

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "mpnanny/Alert.h"
#include "mpnanny/Checker.h"

namespace mpnanny {

/// The ATen ops observed when Options::watched_ops is empty: the knowledge base's risky ops
/// (softmax, exp, log, norms, reductions, matmuls feeding them, losses) and the internal ops
/// LibTorch runs for them when the public op is not dispatched (native_layer_norm, addmm).
const std::vector<std::string>& default_watched_ops();

struct Options {
  /// Trace step 0 and every `trace_interval`-th step. Env: MPNANNY_TRACE_INTERVAL. 0: only step 0
  /// and the dense windows.
  int64_t trace_interval = 100;
  /// Directory of metrics.db (created if missing). Env: MPNANNY_DIR.
  std::string output_dir = "nanny_logs";
  /// The format values are judged against.
  Precision precision = Precision::FP16;
  /// After an ERROR, trace every step for this many steps.
  int64_t dense_steps = 50;
  /// ATen op names (with the "aten::" prefix) to observe; empty: default_watched_ops(). Pass the
  /// knowledge base's list (mpnanny::kb) here.
  std::vector<std::string> watched_ops;
  /// Observe the backward pass too: for each observed forward op, the gradients its autograd
  /// nodes pass to its inputs (gradients that go straight to a parameter are the parameter pass's),
  /// recorded under the forward op's name and line.
  bool observe_backward = true;
  /// Parameters whose name starts with one of these are not observed.
  std::vector<std::string> exclude_parameter_prefixes;
  /// Parameters nested deeper than this many modules ("a.b.weight" has depth 2) are not observed;
  /// negative: no limit.
  int max_parameter_depth = -1;
  /// Measure ||w_after - w_before|| / ||w_after|| on traced steps (copies the weights once).
  bool track_update_ratio = true;
  /// 0: silent, 1: one line per alert type and site the first time it fires, 2: every alert.
  int verbosity = 1;
  AlertThresholds thresholds;
  /// Returns the current loss scale (read at the end of every step). Gradients are divided by it
  /// before the gradient rules run; a decrease between steps counts as a skipped step. Empty: no
  /// loss scaling.
  std::function<double()> loss_scale;
  /// The data-parallel group this rank trains in (docs/data-parallel.md). With it the ranks trace
  /// the same steps (an ERROR on any rank traces every rank densely from the next step), each
  /// gradient is observed before the user's all-reduce (as backward produced it) and after it (its
  /// .grad at the end of the step), and the rank where a NaN, Inf or overflow started is recorded
  /// in every rank's database, as are loss scales the ranks disagree on (LOSS_SCALE_DIVERGED).
  /// This costs one all-reduce of 6 doubles per rank on this group, on traced steps only, so every
  /// rank must begin and end the same steps. The file is metrics-rank<group rank>.db. Empty: every
  /// rank on its own, named by RANK/LOCAL_RANK/WORLD_SIZE where a launcher set them.
  c10::intrusive_ptr<c10d::ProcessGroup> process_group;
  /// Records the writer may hold before it drops new ones.
  size_t queue_capacity = 1 << 16;
  /// How many alerts alerts() keeps: the first ones raised. The database keeps every alert; the
  /// bound keeps the nanny's memory flat on a long run that alerts on every step.
  size_t alerts_in_memory = 1024;
  /// Off switch. Env: MPNANNY_DISABLE=1.
  bool enabled = true;
  /// Site verification: confirm or clear the static findings of `mpnanny-check --export-sites` at
  /// run time. Every site ends the run with a verdict (CONFIRMED, AT_RISK, NOT_OBSERVED,
  /// NOT_REACHED) printed in one table at close() and stored in the site_verdicts table.
  /// Env: MPNANNY_VERIFY=1 (0 turns it off). Without any Nanny in the program, MPNANNY_VERIFY=1
  /// starts one at load time (README, "Closing the loop").
  bool verify = false;
  /// The sites file. Env: MPNANNY_SITES.
  std::string sites_file = "mpnanny-sites.json";
  /// The sites' ops are observed on every one of the first `verify_steps` steps, then on the
  /// traced steps only. Env: MPNANNY_VERIFY_STEPS.
  int64_t verify_steps = 200;
};

/// Adapts a scaler object with a `get_scale()` (or `scale()` returning a number) member to
/// Options::loss_scale. The scaler must outlive the nanny.
template <typename Scaler>
std::function<double()> loss_scale_of(const Scaler& scaler) {
  return [&scaler] { return static_cast<double>(scaler.get_scale()); };
}

class Nanny;
Nanny& watch(const std::shared_ptr<torch::nn::Module>& model, Options options);

/// Ends the step when destroyed (RAII around begin_step/end_step).
class StepGuard {
 public:
  StepGuard(StepGuard&& other) noexcept : nanny_(other.nanny_) { other.nanny_ = nullptr; }
  StepGuard& operator=(StepGuard&&) = delete;
  StepGuard(const StepGuard&) = delete;
  ~StepGuard();
  /// Ends the step early (before the guard goes out of scope).
  void end();

 private:
  friend class Nanny;
  explicit StepGuard(Nanny* nanny) : nanny_(nanny) {}
  Nanny* nanny_;
};

class Nanny {
 public:
  Nanny(std::shared_ptr<torch::nn::Module> model, Options options = {});
  template <typename ModuleType>
  Nanny(const torch::nn::ModuleHolder<ModuleType>& model, Options options = {})
      : Nanny(std::static_pointer_cast<torch::nn::Module>(model.ptr()), std::move(options)) {}
  /// Observes ops only (no parameters).
  explicit Nanny(Options options);
  ~Nanny();
  Nanny(const Nanny&) = delete;
  Nanny& operator=(const Nanny&) = delete;

  [[nodiscard]] StepGuard step(int64_t step);
  void begin_step(int64_t step);
  void end_step();

  /// Stores a scalar (loss, learning rate) for the current step (or the last one).
  void record_scalar(const std::string& name, double value);
  /// Blocks until everything observed so far is in the database.
  void flush();
  /// Stops observing, drains the writer and joins its thread. Idempotent; also run by ~Nanny.
  void close();

  /// Stops observing until resume(): the step in progress ends, the parameters' gradient hooks are
  /// removed, and steps begun while paused are neither observed nor recorded, so a paused nanny
  /// costs the training what no nanny costs (an evaluation pass, a block of a benchmark). With
  /// Options::process_group it is a collective: call it, and resume(), on every rank at the same
  /// step, since a paused rank takes no part in the agreement of traced steps.
  void pause();
  /// Observes again from the next begin_step; the gradient hooks are put back.
  void resume();
  bool paused() const;

  /// False once disabled (option, environment) or switched off by an error.
  bool active() const;
  /// The first Options::alerts_in_memory alerts raised, in order (the database holds them all).
  std::vector<Alert> alerts() const;
  /// Path of the database file; empty when disabled.
  std::string database_path() const;
  /// The options in effect after environment overrides.
  const Options& options() const;

  class Impl;

 private:
  friend Nanny& watch(const std::shared_ptr<torch::nn::Module>& model, Options options);
  Impl& impl_for_watch() { return *impl_; }
  std::unique_ptr<Impl> impl_;
};

/// The quickest start: a process-wide nanny with default options (and environment overrides)
/// without a step loop: each backward pass ends a step, once all its nodes ran, and the next
/// step begins there (so an optimizer update after backward counts in the next step). It is
/// closed at exit. Calling it again returns the same nanny (options ignored) until that one is
/// closed, and then starts a new one; a different model while one is watched gets a warning (once
/// per nanny) and is not watched.
/// Prefer a Nanny with step guards for anything but a first look.
Nanny& watch(const std::shared_ptr<torch::nn::Module>& model, Options options);
inline Nanny& watch(const std::shared_ptr<torch::nn::Module>& model) { return watch(model, Options{}); }
template <typename ModuleType>
Nanny& watch(const torch::nn::ModuleHolder<ModuleType>& model, Options options = {}) {
  return watch(std::static_pointer_cast<torch::nn::Module>(model.ptr()), std::move(options));
}

}  // namespace mpnanny

#endif  // MPNANNY_NANNY_H
