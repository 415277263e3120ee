// A Nanny's session: the step lifecycle (Nanny.cpp), and the rooms it runs each observation
// through. The op path, observe -> stats -> policy -> record, is OpObserver.cpp's (forward ops
// through RecordFunction, backward nodes through BackwardHooks), OpStats, AlertPolicy and
// Recorder.
#ifndef MPNANNY_RUNTIME_NANNYIMPL_H
#define MPNANNY_RUNTIME_NANNYIMPL_H

#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "AlertPolicy.h"
#include "BackwardHooks.h"
#include "OpObserver.h"
#include "OpStats.h"
#include "RankAgreement.h"
#include "Recorder.h"
#include "SiteVerifier.h"
#include "SourceLocator.h"
#include "mpnanny/Nanny.h"
#include "mpnanny/Sampler.h"

namespace mpnanny {

struct Environment;

/// Site verification: the verifier, and what the op path asks of it.
struct VerifiedSites {
  std::unique_ptr<SiteVerifier> verifier;  // guarded by the session's lock once it runs
  std::vector<bool> op_has_site;           // by watched index: some site names this op
  bool opless = false;                     // some site names no op at all
  // Ops of the sites' kinds observed with and without a source line (the session's lock).
  int64_t ops_with_line = 0;
  int64_t ops_without_line = 0;
};

class Nanny::Impl {
 public:
  /// `implicit_steps`: the session MPNANNY_VERIFY=1 starts without user code; it finds step
  /// boundaries itself (on_forward_op_signal) and opens its database only once it has something
  /// to write. `environment` overrides `options`.
  Impl(std::shared_ptr<torch::nn::Module> model, Options options, const Environment& environment,
       bool implicit_steps = false);
  ~Impl();

  // The public API (Nanny.cpp).
  void begin_step(int64_t step);
  void end_step();
  void record_scalar(const std::string& name, double value);
  void flush();
  void close();
  void pause();
  void resume();
  bool paused() const { return paused_.load(); }
  /// Stops observing for good, after one warning (none for an empty `why`); training goes on.
  void switch_off(const std::string& why);
  bool active() const { return active_.load(); }
  bool closed() const { return closed_.load(); }
  const torch::nn::Module* model() const { return model_.get(); }
  std::vector<Alert> alerts() const;
  std::string database_path() const { return recorder_.database_path(); }
  const Options& options() const { return options_; }
  /// watch(): a step ends with each backward pass (on_gradient queues end_watched_step).
  void start_watch_mode();
  void end_watched_step();
  /// A user's Nanny takes the implicit session over: it stops observing and gives up the verifier
  /// with the evidence gathered so far.
  std::unique_ptr<SiteVerifier> hand_over();
  /// In a child process after fork(): the session is the parent's, and off here for good. True
  /// when it was observing.
  bool forget_after_fork();

  // Implicit sessions: every op and backward node passes the step counter (OpObserver) first. A
  // step is one backward pass: the first forward op after a backward pass begins the next step.
  void on_backward_node_signal();
  void on_forward_op_signal();

  // Autograd hooks (BackwardHooks).
  void on_gradient(const std::string& name, const at::Tensor& gradient);
  /// A backward node of an observed forward op ran: `gradients` are what it passes on, and
  /// `to_inputs` those that leave the op (to its inputs, rather than to another of its nodes).
  void on_backward_gradients(ObservedOp op, const std::vector<uint32_t>& to_inputs,
                             const std::vector<at::Tensor>& gradients);

  // RecordFunction callbacks (OpObserver).
  std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn);
  void on_op_end(const at::RecordFunction& fn, ObservedOp& op);

 private:
  // The op path (OpObserver.cpp).
  /// The op's line and, where it is one, its verified site.
  void locate(ObservedOp& op, bool for_sites);
  /// A site's op: the type of its first tensor and its first scalar argument (on_op_end reads
  /// them when the op raises).
  void note_site_arguments(const at::RecordFunction& fn, ObservedOp& op);
  /// One tensor of an observed op: its output, or a gradient its backward node passes on.
  void observe_op_tensor(const at::Tensor& tensor, const ObservedOp& op);
  void show_to_verifier(const ObservedOp& op, OpStats& stats, at::ScalarType dtype);

  // The session and its steps (Nanny.cpp).
  void start(std::vector<std::string> watched_names);
  void start_verification(std::vector<std::string>& watched_names);
  bool step_may_be_observed(int64_t step) const;
  /// With mutex_ held: the policy's `finding` becomes an alert of this step.
  void raise(const Finding& finding, Phase phase, const std::string& op, const std::string& name, int64_t location_id,
             int64_t seq);
  void copy_weights_before_update();
  void observe_parameters();
  void observe_parameter(const std::string& name, const at::Tensor& weight, size_t weight_index);
  bool parameter_selected(const std::string& name) const;
  void observe_loss_scale();
  // Data parallelism (NannyInGroup.cpp, RankAgreement).
  void observe_reduced_gradients();
  /// The end of a traced step in a process group: every rank's report, the dense window every
  /// rank opens, LOSS_SCALE_DIVERGED and the rank_agreement rows. `observed`: false for a session
  /// switched off, which still takes part so that the other ranks do not wait for it.
  void agree_with_group(bool observed);
  std::optional<double> read_loss_scale() const;
  void report_verdicts();

  Options options_;
  std::shared_ptr<torch::nn::Module> model_;
  const bool implicit_steps_;
  std::atomic<bool> active_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> paused_{false};  // pause(): steps are not begun, the gradient hooks are removed

  mutable std::mutex mutex_;  // guards the rooms below: callbacks may run on several threads
  Recorder recorder_;
  Sampler sampler_;
  AlertPolicy policy_;
  WatchedOps watched_;
  BackwardHooks hooks_;
  std::unique_ptr<SourceLocator> locator_;
  VerifiedSites sites_;

  // A step is observed when it is traced or, during the first verify_steps steps, for the
  // verifier alone (verify_only_: no records, no parameters, only the sites' ops).
  int64_t steps_begun_ = 0;
  std::atomic<bool> observing_{false};
  std::atomic<bool> verify_only_{false};

  // Implicit steps (on_*_signal).
  std::atomic<bool> counting_steps_{false};
  std::atomic<bool> backward_seen_{false};
  std::atomic<bool> implicit_step_open_{false};
  std::mutex step_signal_mutex_;

  // The parameter pass. Gradients are taken from autograd hooks on the parameters, as backward
  // produced them (AlertPolicy::judge_gradient unscales them).
  std::vector<at::Tensor> weights_before_;
  std::unordered_map<std::string, at::Tensor> step_gradients_;  // guarded by mutex_

  // A process group: the agreement, and this rank's report for the next one (reset when sent).
  // Only the thread that begins and ends steps touches them.
  std::unique_ptr<RankAgreement> agreement_;
  RankReport report_;
  bool scales_diverged_ = false;  // the last agreement found the ranks' loss scales apart
  bool off_step_open_ = false;    // a step of a switched-off session in a group: traced_ says whether it agrees

  // watch().
  bool watch_mode_ = false;
  std::atomic<bool> watch_step_end_queued_{false};  // a backward pass will end watch()'s step

  // The step.
  /// The thread that began the step: its ops are the step's. Another thread's are not (a data
  /// loader's workers normalizing the next batches were recorded as the model's forward ops,
  /// under whatever step was current and with no line of the model).
  std::atomic<std::thread::id> step_thread_{};
  // Read by gradient hooks, which run on the threads of whatever backward pass is running.
  std::atomic<bool> in_step_{false};
  std::atomic<bool> traced_{false};
  bool dense_ = false;
  int64_t step_ = 0;
  int64_t seq_ = 0;
  int64_t step_alerts_ = 0;
  std::chrono::steady_clock::time_point step_started_;
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_NANNYIMPL_H
