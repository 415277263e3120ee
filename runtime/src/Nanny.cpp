// Reading RecordFunction inputs needs the same RecordFunction layout as LibTorch, which is built
// with NDEBUG (the CMake target defines it for every build type).
#ifndef NDEBUG
#error "mpnanny's op observer must be compiled with -DNDEBUG (RecordFunction's layout depends on it)"
#endif

#include "mpnanny/Nanny.h"

#include <ATen/SequenceNumber.h>
#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/version.h>
#include <pthread.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "Environment.h"
#include "AlertPolicy.h"
#include "MaskedFpExceptions.h"
#include "OpStats.h"
#include "SiteVerifier.h"
#include "MemoryStats.h"
#include "SourceLocator.h"
#include "VerifyFromEnvironment.h"
#include "mpnanny/MetricsWriter.h"
#include "mpnanny/Sampler.h"
#include "mpnanny/TensorStats.h"

namespace mpnanny {

const std::vector<std::string>& default_watched_ops() {
  // Generated at build time from the knowledge base (rules/*.yaml) by runtime/tools/
  // watched_ops_gen.cpp, which also holds the few ops the observer needs that the KB does not name.
  static const std::vector<std::string> kOps = {
#include "mpnanny_watched_ops.inc"
  };
  return kOps;
}

namespace {

std::atomic<bool> g_warned_internal{false};

void warn_once_internal(const std::string& what) {
  if (!g_warned_internal.exchange(true)) {
    std::cerr << "mpnanny: warning: " << what << "; monitoring is switched off, training continues\n";
  }
}

Options overridden(Options options, const Environment& environment) {
  environment.apply_to(options);
  return options;
}

std::string shape_of(const at::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (d) text += ',';
    text += std::to_string(tensor.size(d));
  }
  return text + "]";
}

/// A watched op as observed: by its start and end callbacks in the forward pass, and by the post
/// hooks on its autograd nodes in the backward pass.
struct ObservedOp : at::ObserverContext {
  bool outermost = false;
  Phase phase = Phase::Forward;
  int32_t op_index = -1;
  int64_t location_id = 0;
  int64_t site = -1;  // index in the SiteVerifier, when the op belongs to a verified site
  bool site_reads_argument = false;  // the site is judged on the op's input too (SiteVerifier::judges_argument)
  uint64_t first_sequence_nr = 0;
  bool hid_inner_ops = false;  // switched RecordFunction off on this thread until its end
  std::vector<at::Tensor> inputs;
};

/// Only the outermost watched op is observed, yet every op inside it (the select and as_strided
/// calls of bmm's CPU kernel: most of a forward pass's ops) would pay for a RecordFunction while
/// the callback is on. RecordFunction is switched off on this thread for the op's duration, and
/// back on by its end callback, which LibTorch runs however the op ends. Not while thread-local
/// callbacks (the profiler's) are registered: they would lose the inner ops.
void hide_inner_ops(ObservedOp& op) {
  if (at::hasThreadLocalCallbacks() || !at::isRecordFunctionEnabled()) return;
  at::enableRecordFunction(false);
  op.hid_inner_ops = true;
}

/// What the step counter hands to the end of a backward node: only that it was one.
struct BackwardNodeMark : at::ObserverContext {};

// Per thread: how deep we are in watched ops (only the outermost is observed, so linear ->
// addmm is one observation).
thread_local int t_watched_depth = 0;
// The thread's answers of watched_index. exit() destroys the main thread's thread_locals before
// the atexit handlers that close watch()'s nanny and the verification session, and ops may still
// run in between: once the cache is gone, lookups go uncached.
thread_local bool t_name_cache_destroyed = false;
struct NameCache {
  std::unordered_map<const char*, int32_t> indices;
  uint64_t generation = 0;
  ~NameCache() { t_name_cache_destroyed = true; }
};
thread_local NameCache t_name_cache;

std::atomic<uint64_t> g_session_generation{0};

// Backward nodes running on this thread, as the implicit step counter sees them: ops inside them
// are the backward pass, not the start of the next step.
thread_local int t_step_signal_backward_depth = 0;

/// Sites files by path, read once per process, so that a missing, malformed or stale file gives
/// one warning however many sessions (the implicit one, then the user's) read it.
const SitesFile& sites_file_once(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, SitesFile> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(path);
  if (found == loaded.end()) {
    found = loaded.emplace(path, load_sites(path)).first;
    if (!found->second.warning.empty()) std::cerr << found->second.warning << "\n";
  }
  return found->second;
}

}  // namespace

/// What the autograd hooks a session installs call back into: emptied when the session closes,
/// while the hooks may live on in a graph or on a parameter.
struct HookTarget {
  std::atomic<Nanny::Impl*> impl{nullptr};
};

class Nanny::Impl {
 public:
  /// `implicit_steps`: the session MPNANNY_VERIFY=1 starts without user code; it finds step
  /// boundaries itself (on_step_signal) and opens its database only once it has something to write.
  /// `environment` overrides `options`.
  Impl(std::shared_ptr<torch::nn::Module> model, Options options, const Environment& environment,
       bool implicit_steps = false);
  ~Impl();

  void begin_step(int64_t step);
  void end_step();
  void record_scalar(const std::string& name, double value);
  void flush();
  void close();
  /// Stops observing for good, after one warning (none for an empty `why`); training goes on.
  void switch_off(const std::string& why);
  bool active() const { return active_.load(); }
  bool closed() const { return closed_.load(); }
  const torch::nn::Module* model() const { return model_.get(); }
  std::vector<Alert> alerts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return alerts_;
  }
  std::string database_path() const { return database_path_; }
  const Options& options() const { return options_; }

  std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn);
  /// watch(): a step ends with each backward pass (on_gradient queues end_watched_step).
  void start_watch_mode();
  void end_watched_step();
  void on_gradient(const std::string& name, const at::Tensor& gradient);
  void on_op_end(const at::RecordFunction& fn, ObservedOp& op);
  /// A backward node of an observed forward op ran: `gradients` are what it passes on, and
  /// `to_inputs` those that leave the op (to its inputs, rather than to another of its nodes).
  void on_backward_gradients(ObservedOp op, const std::vector<uint32_t>& to_inputs,
                             const std::vector<at::Tensor>& gradients);
  /// Implicit sessions: every op and backward node passes here first (a light callback without
  /// inputs). A step is one backward pass: the first forward op after a backward pass begins the
  /// next step. Returns a context only for backward nodes (so that their end can be counted).
  std::unique_ptr<at::ObserverContext> on_step_signal(const at::RecordFunction& fn);
  /// A user's Nanny takes the implicit session over: it stops observing and gives up the verifier
  /// with the evidence gathered so far.
  std::unique_ptr<SiteVerifier> hand_over();
  /// In a child process after fork(): the session is the parent's, and off here for good. Its
  /// writer is left alone, never destroyed: its thread is not in this process, and destroying
  /// it waited forever on that thread's condition variable. True when it was observing.
  bool forget_after_fork();

 private:
  void start_verification();
  bool step_may_be_observed(int64_t step) const;
  void report_verdicts();
  bool open_writer();
  std::string options_json() const;
  bool enqueue(Record record);
  int32_t watched_index(const char* name);
  int64_t location_id_for(const SourceLocation* frame);
  SourceLocation location_of(int64_t location_id) const;
  void raise(const Finding& finding, Phase phase, const std::string& op, const std::string& name,
             int64_t location_id, int64_t seq);
  void observe_parameters();
  void install_gradient_hooks();
  void remove_gradient_hooks();
  bool parameter_selected(const std::string& name) const;
  void observe_loss_scale();
  std::optional<double> read_loss_scale() const;
  void hook_backward_of(const at::Tensor& output, const ObservedOp& op);
  /// True where a gradient passed to `node` is a watched parameter's gradient, possibly
  /// rearranged (transposed, viewed) on the way: the parameter pass records it.
  bool reaches_watched_parameter(const torch::autograd::Node* node) const;
  /// One tensor of an observed op: its output, or a gradient its backward node passes on.
  void observe_op_tensor(const at::Tensor& tensor, const ObservedOp& op);
  void show_to_verifier(const ObservedOp& op, OpStats& stats);

  Options options_;
  std::shared_ptr<torch::nn::Module> model_;
  std::atomic<bool> active_{false};
  std::atomic<bool> closed_{false};
  std::unique_ptr<MetricsWriter> writer_;
  // Implicit sessions open the database with their first record, so that a program whose own
  // Nanny takes over before anything happened gets no empty run.
  bool defer_writer_ = false;
  std::once_flag writer_opened_;
  RunInfo run_info_;
  std::string database_path_;
  Sampler sampler_;
  AlertPolicy policy_;
  uint64_t generation_ = 0;

  std::vector<std::string> watched_names_;
  std::unordered_map<std::string, int32_t> watched_lookup_;

  // Site verification. A step is observed when it is traced or, during the first verify_steps
  // steps, for the verifier alone (verify_only_: no records, no parameters, only the sites' ops).
  std::unique_ptr<SiteVerifier> verifier_;  // guarded by mutex_ once the session runs
  std::vector<bool> site_op_;               // by watched index: some site names this op
  bool opless_sites_ = false;               // some site names no op at all
  int64_t steps_begun_ = 0;
  std::atomic<bool> observing_{false};
  std::atomic<bool> verify_only_{false};
  const bool implicit_steps_;
  std::atomic<bool> counting_steps_{false};
  std::atomic<bool> backward_seen_{false};
  std::atomic<bool> implicit_step_open_{false};
  std::mutex step_signal_mutex_;

  mutable std::mutex mutex_;  // guards everything below: callbacks may run on several threads
  std::unique_ptr<SourceLocator> locator_;
  std::map<std::tuple<std::string, int, std::string>, int64_t> location_ids_;
  // By the locator's location object of a frame: stable for the locator's life, and looked up
  // for every observed forward op without building a key of three strings.
  std::unordered_map<const SourceLocation*, int64_t> location_ids_by_frame_;
  std::vector<SourceLocation> locations_{SourceLocation{}};  // index 0: unknown
  std::vector<Alert> alerts_;
  std::set<std::tuple<AlertType, int64_t, std::string>> announced_;
  std::vector<at::Tensor> weights_before_;
  // Gradients are taken from autograd hooks on the parameters, as backward produced them
  // (AlertPolicy::judge_gradient unscales them).
  std::shared_ptr<HookTarget> hook_target_ = std::make_shared<HookTarget>();
  std::vector<std::pair<at::Tensor, unsigned>> hooks_;
  std::unordered_set<const c10::TensorImpl*> hooked_parameters_;  // those of hooks_, set before any op runs
  std::unordered_map<std::string, at::Tensor> step_gradients_;  // guarded by mutex_
  bool watch_mode_ = false;
  // Ops of the sites' kinds observed for the verifier with and without a source line (mutex_).
  int64_t site_ops_with_line_ = 0;
  int64_t site_ops_without_line_ = 0;
  /// The thread that began the step: its ops are the step's. Another thread's are not (a data
  /// loader's workers normalizing the next batches were recorded as the model's forward ops,
  /// under whatever step was current and with no line of the model).
  std::atomic<std::thread::id> step_thread_{};
  std::atomic<bool> watch_step_end_queued_{false};  // a backward pass will end watch()'s step
  // Read by gradient hooks, which run on the threads of whatever backward pass is running.
  std::atomic<bool> in_step_{false};
  std::atomic<bool> traced_{false};
  bool dense_ = false;
  int64_t step_ = 0;
  int64_t seq_ = 0;
  int64_t step_alerts_ = 0;
  std::chrono::steady_clock::time_point step_started_;
};

namespace {

/// Observes, when a backward node of an observed forward op has run, the gradients it passes to
/// the op's inputs.
class BackwardObservation final : public torch::autograd::FunctionPostHook {
 public:
  BackwardObservation(std::shared_ptr<HookTarget> target, ObservedOp op, std::vector<uint32_t> to_inputs)
      : target_(std::move(target)), op_(std::move(op)), to_inputs_(std::move(to_inputs)) {}

  torch::autograd::variable_list operator()(const torch::autograd::variable_list& gradients,
                                            const torch::autograd::variable_list&) override {
    if (Nanny::Impl* impl = target_->impl.load()) {
      const MaskedFpExceptions masked;
      try {
        impl->on_backward_gradients(op_, to_inputs_, gradients);
      } catch (...) {
        // a hook must never throw into the backward pass it watches
      }
    }
    return gradients;
  }

 private:
  std::shared_ptr<HookTarget> target_;
  ObservedOp op_;
  std::vector<uint32_t> to_inputs_;
};

/// The process-wide RecordFunction callback. It is registered once and stays registered
/// (removing a global callback is only safe when no other thread runs ops); between traced
/// steps it is disabled, so LibTorch does not even construct a RecordFunction for it.
class OpObserver {
 public:
  static OpObserver& instance() {
    static OpObserver observer;
    return observer;
  }

  /// The implicit session's step counter: a second callback, without inputs, always on while
  /// that session runs. It is registered before the observing callback, and LibTorch runs global
  /// callbacks in registration order, so a step boundary is settled before the op is observed.
  void set_step_counter(Nanny::Impl* session) {
    std::lock_guard<std::mutex> lock(mutex_);
    step_counter_session_.store(session, std::memory_order_release);
    if (session && counter_handle_ == at::INVALID_CALLBACK_HANDLE) {
      counter_handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_counter_start, &on_counter_end)
                                                  .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    } else if (session) {
      at::reenableCallback(counter_handle_);
    } else if (counter_handle_ != at::INVALID_CALLBACK_HANDLE) {
      at::disableCallback(counter_handle_);
    }
  }

  bool attach(Nanny::Impl* session) {
    Nanny::Impl* expected = nullptr;
    return session_.compare_exchange_strong(expected, session);
  }
  void detach(Nanny::Impl* session) {
    Nanny::Impl* expected = session;
    if (session_.compare_exchange_strong(expected, nullptr)) set_tracing(false);
  }
  /// fork(): the child gets no session of the parent's. The callbacks stay registered (LibTorch's
  /// registry has its own lock, which another thread of the parent may have held); with no session
  /// they return at once, and a Nanny made in the child attaches as in any process.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }
  void forget_sessions_after_fork() {
    session_.store(nullptr);
    step_counter_session_.store(nullptr);
  }
  void set_tracing(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool was_paused = paused_for_backward_;
    paused_for_backward_ = false;
    if (on == tracing_ && !was_paused) return;
    if (on) {
      switch_on(handle_);
    } else {
      switch_off(handle_);
    }
    tracing_ = on;
  }

  /// A global callback makes LibTorch build a RecordFunction for every op on every thread, and the
  /// backward pass runs most of a step's ops (on the example model, bmm's CPU kernel alone runs
  /// thousands of select and as_strided ops, two thirds of them in backward nodes). The backward
  /// pass is observed through post hooks on the autograd nodes of the watched forward ops instead
  /// (see hook_backward_of), so the callback goes off at the first node of a backward pass, and
  /// back on when the engine finishes it, for a later forward pass of the same step (gradient
  /// accumulation) and the next backward pass.
  void pause_for_backward() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!tracing_ || paused_for_backward_) return;
    try {
      // Throws outside an engine's graph task (a node called by hand): the callback then stays on.
      torch::autograd::Engine::get_default_engine().queue_callback([] { instance().resume_after_backward(); });
    } catch (...) {
      return;
    }
    switch_off(handle_);
    paused_for_backward_ = true;
  }

 private:
  void resume_after_backward() {
    std::lock_guard<std::mutex> lock(mutex_);
    // Not paused any more: the step ended, or began again, while the backward pass ran.
    if (!tracing_ || !paused_for_backward_) return;
    paused_for_backward_ = false;
    switch_on(handle_);
  }

  static std::unique_ptr<at::ObserverContext> on_counter_start(const at::RecordFunction& fn) {
    Nanny::Impl* session = instance().step_counter_session_.load(std::memory_order_acquire);
    if (!session) return nullptr;
    try {
      return session->on_step_signal(fn);
    } catch (...) {
      return nullptr;
    }
  }
  static void on_counter_end(const at::RecordFunction&, at::ObserverContext* context) {
    if (context && t_step_signal_backward_depth > 0) --t_step_signal_backward_depth;
  }

  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    Nanny::Impl* session = instance().session_.load(std::memory_order_acquire);
    if (!session) return nullptr;
    try {
      return session->on_op_start(fn);
    } catch (...) {
      return nullptr;  // an observer must never throw into the op it watches
    }
  }
  static void on_end(const at::RecordFunction& fn, at::ObserverContext* context) {
    if (!context) return;
    auto& op = *static_cast<ObservedOp*>(context);
    if (op.hid_inner_ops) at::enableRecordFunction(true);
    --t_watched_depth;
    if (!op.outermost) return;
    Nanny::Impl* session = instance().session_.load(std::memory_order_acquire);
    if (!session) return;
    const MaskedFpExceptions masked;
    try {
      session->on_op_end(fn, op);
    } catch (...) {
    }
  }

  // Inputs are read in the forward pass only (the swamping rule reads a reduction's input, the
  // propagation test a bad output's inputs), and the callback is off during backward passes.
  static void switch_on(at::CallbackHandle& handle) {
    if (handle == at::INVALID_CALLBACK_HANDLE) {
      handle = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                         .needsInputs(true)
                                         .needsOutputs(true)
                                         .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    } else {
      at::reenableCallback(handle);
    }
  }
  static void switch_off(at::CallbackHandle handle) {
    if (handle != at::INVALID_CALLBACK_HANDLE) at::disableCallback(handle);
  }

  std::atomic<Nanny::Impl*> session_{nullptr};
  std::atomic<Nanny::Impl*> step_counter_session_{nullptr};
  std::mutex mutex_;
  bool tracing_ = false;
  bool paused_for_backward_ = false;
  at::CallbackHandle handle_ = at::INVALID_CALLBACK_HANDLE;
  at::CallbackHandle counter_handle_ = at::INVALID_CALLBACK_HANDLE;
};

/// The session MPNANNY_VERIFY=1 started at load time, until a user's Nanny takes it over.
std::atomic<Nanny::Impl*> g_implicit_session{nullptr};
/// The same session for the whole process: once handed over or switched off it is not used again,
/// but an op callback on another thread may still be inside it, so it is never deleted, and this
/// keeps it referenced (a leak checker then sees memory kept on purpose, not lost). Volatile: the
/// program never reads it, and the compiler would otherwise drop the store.
Nanny::Impl* volatile g_implicit_session_kept = nullptr;

/// Every session of this process, for the fork handler. Leaked: sessions closed at exit may
/// outlive the statics.
struct LiveSessions {
  std::mutex mutex;
  std::vector<Nanny::Impl*> sessions;
};
LiveSessions& live_sessions() {
  static LiveSessions* sessions = new LiveSessions;
  return *sessions;
}

/// A training program may fork (a launcher, a data worker, a checkpoint writer) after its Nanny
/// started. The child inherits the sessions but not their writer threads: it would hang at exit
/// destroying them, and its records would go nowhere. The child's sessions switch off with one
/// line on stderr (write(2): the child of a threaded process should call little else).
void watch_for_fork() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(
        [] {
          live_sessions().mutex.lock();
          OpObserver::instance().lock_for_fork();
        },
        [] {
          OpObserver::instance().unlock_after_fork();
          live_sessions().mutex.unlock();
        },
        [] {
          OpObserver::instance().forget_sessions_after_fork();
          OpObserver::instance().unlock_after_fork();
          g_implicit_session.store(nullptr);
          bool observing = false;
          for (Nanny::Impl* session : live_sessions().sessions) observing = session->forget_after_fork() || observing;
          live_sessions().sessions.clear();
          live_sessions().mutex.unlock();
          if (observing) {
            static const char kWarning[] =
                "mpnanny: warning: this process was forked from one a Nanny watches; that Nanny is off here (its "
                "database is the parent's), training continues. A Nanny made in this process watches it.\n";
            const ssize_t written = write(STDERR_FILENO, kWarning, sizeof kWarning - 1);
            (void)written;
          }
        });
  });
}

}  // namespace

Nanny::Impl::~Impl() {
  close();
  std::lock_guard<std::mutex> lock(live_sessions().mutex);
  auto& sessions = live_sessions().sessions;
  sessions.erase(std::remove(sessions.begin(), sessions.end(), this), sessions.end());
}

bool Nanny::Impl::forget_after_fork() {
  const bool was_active = active_.exchange(false);
  closed_ = true;
  counting_steps_ = false;
  hook_target_->impl = nullptr;
  (void)writer_.release();
  return was_active;
}

Nanny::Impl::Impl(std::shared_ptr<torch::nn::Module> model, Options options, const Environment& environment,
                  bool implicit_steps)
    : options_(overridden(std::move(options), environment)),
      model_(std::move(model)),
      sampler_(options_.trace_interval, options_.dense_steps),
      policy_(options_, sampler_),
      implicit_steps_(implicit_steps) {
  watch_for_fork();
  {
    std::lock_guard<std::mutex> lock(live_sessions().mutex);
    live_sessions().sessions.push_back(this);
  }
  try {
    if (!options_.enabled) return;

    watched_names_ = options_.watched_ops.empty() ? default_watched_ops() : options_.watched_ops;
    if (options_.verify) start_verification();
    if (implicit_steps_ && !verifier_) return;  // nothing to verify: the warning has been printed
    for (size_t i = 0; i < watched_names_.size(); ++i) watched_lookup_.emplace(watched_names_[i], static_cast<int32_t>(i));
    if (verifier_) {
      site_op_.resize(watched_names_.size());
      for (size_t i = 0; i < watched_names_.size(); ++i) site_op_[i] = verifier_->any_site_watches(watched_names_[i]);
      opless_sites_ = std::any_of(verifier_->sites().begin(), verifier_->sites().end(),
                                  [](const Site& site) { return site.aten_ops.empty(); });
    }
    generation_ = ++g_session_generation;

    RunInfo& run = run_info_;
    const LaunchRanks ranks = LaunchRanks::read();
    const auto& rank = ranks.rank;
    const auto& local_rank = ranks.local_rank;
    run.rank = static_cast<int>(rank ? *rank : local_rank.value_or(0));
    run.local_rank = static_cast<int>(local_rank.value_or(0));
    if (ranks.world_size) run.world_size = static_cast<int>(*ranks.world_size);
    run.precision = to_string(options_.precision);
    run.options_json = options_json();
    run.torch_version = TORCH_VERSION;

    const std::string file_name =
        (rank || local_rank) ? "metrics-rank" + std::to_string(run.rank) + ".db" : std::string("metrics.db");
    database_path_ = (std::filesystem::path(options_.output_dir) / file_name).string();
    if (implicit_steps_) {
      defer_writer_ = true;
    } else if (!open_writer()) {
      return;
    }
    locator_ = std::make_unique<SourceLocator>();
    hook_target_->impl = this;
    install_gradient_hooks();
    if (!OpObserver::instance().attach(this)) {
      std::cerr << "mpnanny: warning: another Nanny is already observing ops; this one records parameters, "
                   "loss scale and scalars only\n";
      verifier_.reset();  // the sites' ops go to the session that observes ops
    }
    active_ = true;
    if (implicit_steps_) {
      counting_steps_ = true;
      OpObserver::instance().set_step_counter(this);
    }
  } catch (const std::exception& exception) {
    switch_off(exception.what());
  }
}

bool Nanny::Impl::open_writer() {
  std::error_code error;
  std::filesystem::create_directories(options_.output_dir, error);
  if (error) {
    std::cerr << "mpnanny: warning: cannot create " << options_.output_dir << ": " << error.message()
              << "; monitoring is switched off, training continues\n";
    return false;
  }
  WriterOptions writer_options;
  writer_options.queue_capacity = options_.queue_capacity;
  writer_ = std::make_unique<MetricsWriter>(database_path_, run_info_, writer_options);
  return writer_->ok();  // otherwise the writer has warned
}

void Nanny::Impl::start_verification() {
  // A session MPNANNY_VERIFY=1 started before this one hands over what it has seen.
  if (!implicit_steps_) {
    if (Impl* implicit = g_implicit_session.exchange(nullptr)) verifier_ = implicit->hand_over();
  }
  if (!verifier_) {
    const SitesFile& file = sites_file_once(options_.sites_file);
    if (file.sites.empty()) return;
    verifier_ = std::make_unique<SiteVerifier>(file.sites, options_.precision);
  }
  // The sites' ops must be observed even where the default list does not name them.
  for (const std::string& op : verifier_->watched_ops()) {
    if (std::find(watched_names_.begin(), watched_names_.end(), op) == watched_names_.end()) {
      watched_names_.push_back(op);
    }
  }
}

std::unique_ptr<SiteVerifier> Nanny::Impl::hand_over() {
  std::lock_guard<std::mutex> step_lock(step_signal_mutex_);
  counting_steps_ = false;
  OpObserver::instance().set_step_counter(nullptr);
  closed_ = true;
  active_ = false;
  observing_ = false;
  OpObserver::instance().detach(this);
  hook_target_->impl = nullptr;
  if (writer_) writer_->close();  // what it recorded before the takeover stays, as its own run
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(verifier_);
}

bool Nanny::Impl::step_may_be_observed(int64_t step) const {
  // A forecast only, to switch the observer on before the first op of `step` runs; the Sampler
  // decides in begin_step.
  return (verifier_ && steps_begun_ < options_.verify_steps) || sampler_.in_dense_window(step) ||
         (options_.trace_interval > 0 && step % options_.trace_interval == 0);
}

std::unique_ptr<at::ObserverContext> Nanny::Impl::on_step_signal(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ++t_step_signal_backward_depth;
    if (counting_steps_.load() && !backward_seen_.exchange(true) && step_may_be_observed(step_ + 1)) {
      OpObserver::instance().set_tracing(true);
    }
    return std::make_unique<BackwardNodeMark>();
  }
  // Ops inside backward nodes, the optimizer's update and evaluation code (grad mode off) belong
  // to the step in progress.
  if (t_step_signal_backward_depth > 0 || !c10::GradMode::is_enabled()) return nullptr;
  if (implicit_step_open_.load(std::memory_order_acquire) && !backward_seen_.load(std::memory_order_acquire)) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(step_signal_mutex_);
  if (!counting_steps_.load()) return nullptr;
  if (!implicit_step_open_.load()) {
    begin_step(0);
    implicit_step_open_ = true;
  } else if (backward_seen_.exchange(false)) {
    const int64_t next = step_ + 1;
    end_step();
    begin_step(next);
  }
  return nullptr;
}

std::string Nanny::Impl::options_json() const {
  const AlertThresholds& t = options_.thresholds;
  nlohmann::json json = {
      {"trace_interval", options_.trace_interval},
      {"output_dir", options_.output_dir},
      {"precision", to_string(options_.precision)},
      {"dense_steps", options_.dense_steps},
      {"watched_ops", watched_names_},
      {"observe_backward", options_.observe_backward},
      {"exclude_parameter_prefixes", options_.exclude_parameter_prefixes},
      {"max_parameter_depth", options_.max_parameter_depth},
      {"track_update_ratio", options_.track_update_ratio},
      {"verbosity", options_.verbosity},
      {"verify", static_cast<bool>(verifier_)},
      {"verify_requested", options_.verify},  // asked for, whether or not the sites file loaded
      {"sites_file", options_.sites_file},
      {"verify_steps", options_.verify_steps},
      {"loss_scale_source", static_cast<bool>(options_.loss_scale)},
      {"thresholds",
       {{"overflow_risk_factor", t.overflow_risk_factor},
        {"underflow_share", t.underflow_share},
        {"underflow_min_count", t.underflow_min_count},
        {"grad_explosion_norm", t.grad_explosion_norm},
        {"grad_vanish_norm", t.grad_vanish_norm},
        {"swamping_share", t.swamping_share},
        {"swamping_min_inputs", t.swamping_min_inputs},
        {"loss_scale_min", t.loss_scale_min},
        {"loss_scale_collapse_backoffs", t.loss_scale_collapse_backoffs},
        {"loss_scale_collapse_window", t.loss_scale_collapse_window},
        {"adaptive_enabled", t.adaptive_enabled},
        {"adaptive_warmup", t.adaptive_warmup},
        {"adaptive_k", t.adaptive_k},
        {"adaptive_window", t.adaptive_window}}}};
  return json.dump();
}

void Nanny::Impl::switch_off(const std::string& why) {
  if (!why.empty()) warn_once_internal(why);
  active_ = false;
  counting_steps_ = false;
  OpObserver::instance().detach(this);
}

bool Nanny::Impl::enqueue(Record record) {
  if (defer_writer_) {
    std::call_once(writer_opened_, [this] {
      if (!open_writer()) switch_off("");
    });
  }
  if (!writer_) return false;
  const bool queued = writer_->enqueue(std::move(record));
  if (!writer_->ok()) switch_off("");
  return queued;
}

int32_t Nanny::Impl::watched_index(const char* name) {
  if (!name) return -1;
  const auto uncached = [&] {
    const auto found = watched_lookup_.find(name);
    return found == watched_lookup_.end() ? int32_t{-1} : found->second;
  };
  if (t_name_cache_destroyed) return uncached();
  auto& indices = t_name_cache.indices;
  if (t_name_cache.generation != generation_) {
    indices.clear();
    t_name_cache.generation = generation_;
  }
  const auto cached = indices.find(name);
  // Op names come from the operator registry and keep their address; a hit is re-checked
  // because a string-named RecordFunction could reuse an address.
  if (cached != indices.end() &&
      (cached->second < 0 || std::strcmp(watched_names_[cached->second].c_str(), name) == 0)) {
    return cached->second;
  }
  const int32_t index = uncached();
  indices[name] = index;
  return index;
}

int64_t Nanny::Impl::location_id_for(const SourceLocation* frame) {
  if (!frame) return 0;
  const auto by_frame = location_ids_by_frame_.find(frame);
  if (by_frame != location_ids_by_frame_.end()) return by_frame->second;
  // Frames at different addresses may name one line: they share its id.
  const auto key = std::make_tuple(frame->file, frame->line, frame->function);
  auto by_line = location_ids_.find(key);
  if (by_line == location_ids_.end()) {
    const auto id = static_cast<int64_t>(locations_.size());
    locations_.push_back(*frame);
    by_line = location_ids_.emplace(key, id).first;
    enqueue(LocationRecord{id, *frame});
  }
  location_ids_by_frame_.emplace(frame, by_line->second);
  return by_line->second;
}

SourceLocation Nanny::Impl::location_of(int64_t location_id) const {
  return location_id > 0 && location_id < static_cast<int64_t>(locations_.size()) ? locations_[location_id]
                                                                                    : SourceLocation{};
}

std::unique_ptr<at::ObserverContext> Nanny::Impl::on_op_start(const at::RecordFunction& fn) {
  // The callback may be on while no step is observed: an implicit session switches it on during
  // a backward pass for the step that follows.
  if (!observing_.load(std::memory_order_acquire)) return nullptr;
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    OpObserver::instance().pause_for_backward();
    return nullptr;
  }
  // watch() and implicit sessions find their steps from the ops themselves, on any thread.
  if (!watch_mode_ && !implicit_steps_ && std::this_thread::get_id() != step_thread_.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  // Ops run with grad mode off are the optimizer's update, the engine's work inside and between
  // nodes, or evaluation code under NoGradGuard: not the model's forward pass.
  if (!c10::GradMode::is_enabled()) return nullptr;
  const int32_t op_index = watched_index(fn.name());
  if (op_index < 0) return nullptr;
  auto context = std::make_unique<ObservedOp>();
  context->op_index = op_index;
  context->outermost = t_watched_depth == 0;
  ++t_watched_depth;
  if (!context->outermost) return context;
  // On a step observed for the verifier alone, only the sites' ops are located and measured.
  const bool for_sites = verifier_ && site_op_[op_index];
  if (verify_only_ && !for_sites) {
    context->outermost = false;  // counted for nesting, not observed
    hide_inner_ops(*context);
    return context;
  }
  // The autograd nodes this op creates take the sequence numbers from here on (hook_backward_of).
  context->first_sequence_nr = at::sequence_number::peek();
  std::lock_guard<std::mutex> lock(mutex_);
  context->location_id = locator_ ? location_id_for(locator_->locate_caller()) : 0;
  if (for_sites && verifier_) {
    const SourceLocation* location = context->location_id > 0 ? &locations_[context->location_id] : nullptr;
    if (location && !location->file.empty() && location->line > 0) {
      ++site_ops_with_line_;
      if (const auto site = verifier_->match(location->file, location->line, watched_names_[op_index])) {
        context->site = static_cast<int64_t>(*site);
      }
    } else {
      ++site_ops_without_line_;
    }
  }
  // The verifier judges some sites by the op's argument (log of a value fp16 flushes to 0).
  context->site_reads_argument = context->site >= 0 && SiteVerifier::judges_argument(watched_names_[op_index]);
  if ((!verify_only_ || context->site_reads_argument) && fn.needsInputs()) {
    for (const c10::IValue& input : fn.inputs()) {
      if (input.isTensor() && is_observable_tensor(input.toTensor())) context->inputs.push_back(input.toTensor());
    }
  }
  hide_inner_ops(*context);  // last: nothing after it may throw, or the ops would stay hidden
  return context;
}

void Nanny::Impl::on_op_end(const at::RecordFunction& fn, ObservedOp& op) {
  if (!active_.load()) return;
  const at::Tensor* output = nullptr;
  for (const c10::IValue& value : fn.outputs()) {
    if (value.isTensor() && is_observable_tensor(value.toTensor())) {
      output = &value.toTensor();
      break;
    }
  }
  if (!output) return;
  if (options_.observe_backward && output->requires_grad() && (!verify_only_ || op.site >= 0 || opless_sites_)) {
    hook_backward_of(*output, op);
  }
  observe_op_tensor(*output, op);
}

void Nanny::Impl::hook_backward_of(const at::Tensor& output, const ObservedOp& op) {
  using torch::autograd::Node;
  const std::shared_ptr<Node>& root = output.grad_fn();
  // Nodes are numbered per thread in creation order, so the op's own are the ones numbered since
  // its start on this thread; the others belong to the ops that made its inputs.
  const uint64_t thread = at::RecordFunction::currentThreadId();
  const uint64_t end = at::sequence_number::peek();
  const auto made_by_op = [&](const Node* node) {
    return node && node->thread_id() == thread && node->sequence_nr() >= op.first_sequence_nr &&
           node->sequence_nr() < end;
  };
  if (!made_by_op(root.get())) return;  // the op recorded no node of its own (it returned an input)
  // A bound on the walk: a recurrent op unrolled over a long sequence creates thousands of nodes,
  // and a traced step must stay cheap.
  constexpr size_t kMaxNodesPerOp = 1024;
  std::vector<Node*> pending{root.get()};
  std::unordered_set<const Node*> seen{root.get()};
  while (!pending.empty()) {
    Node* node = pending.back();
    pending.pop_back();
    std::vector<uint32_t> to_inputs;
    const auto& edges = node->next_edges();
    for (uint32_t index = 0; index < edges.size(); ++index) {
      Node* next = edges[index].function.get();
      if (!next) continue;  // an input that needs no gradient
      if (!made_by_op(next)) {
        if (reaches_watched_parameter(next)) continue;  // the parameter pass observes its gradient
        to_inputs.push_back(index);
      } else if (seen.size() < kMaxNodesPerOp && seen.insert(next).second) {
        pending.push_back(next);
      }
    }
    if (!to_inputs.empty()) {
      ObservedOp backward;
      backward.phase = Phase::Backward;
      backward.op_index = op.op_index;
      backward.location_id = op.location_id;
      backward.site = op.site;
      node->add_post_hook(std::make_unique<BackwardObservation>(hook_target_, std::move(backward), std::move(to_inputs)));
    }
  }
}

bool Nanny::Impl::reaches_watched_parameter(const torch::autograd::Node* node) const {
  // Backward nodes of ops that only rearrange a tensor's elements: the gradient they receive is
  // their input's gradient, element for element. at::linear's weight.t() is the common one.
  static const std::unordered_set<std::string> kRearranging = {
      "TBackward0",          "TransposeBackward0",    "PermuteBackward0", "ViewBackward0",
      "UnsafeViewBackward0", "ReshapeAliasBackward0", "AliasBackward0",   "SqueezeBackward0",
      "SqueezeBackward1",    "UnsqueezeBackward0"};
  // A short chain: a parameter is rarely rearranged more than once or twice before use.
  for (int depth = 0; node && depth < 4; ++depth) {
    if (const auto* accumulate = dynamic_cast<const torch::autograd::AccumulateGrad*>(node)) {
      return hooked_parameters_.count(accumulate->variable.unsafeGetTensorImpl()) > 0;
    }
    if (node->next_edges().size() != 1 || kRearranging.count(node->name()) == 0) return false;
    node = node->next_edges()[0].function.get();
  }
  return false;
}

void Nanny::Impl::on_backward_gradients(ObservedOp op, const std::vector<uint32_t>& to_inputs,
                                        const std::vector<at::Tensor>& gradients) {
  if (!active_.load() || !observing_.load()) return;
  if (op.site < 0 && opless_sites_) {
    // A site whose check names no op (a backward() call without loss scaling) is judged by the
    // backward pass it starts: on the CPU the engine runs on the calling thread, so the first
    // user frame above this hook is that call's line.
    std::lock_guard<std::mutex> lock(mutex_);
    if (const SourceLocation* caller = locator_ && verifier_ ? locator_->locate_caller() : nullptr) {
      if (const auto site = verifier_->match(caller->file, caller->line, watched_names_[op.op_index])) {
        op.site = static_cast<int64_t>(*site);
      }
    }
  }
  for (const uint32_t index : to_inputs) {
    if (index < gradients.size() && gradients[index].defined() && is_observable_tensor(gradients[index])) {
      observe_op_tensor(gradients[index], op);
    }
  }
}

void Nanny::Impl::observe_op_tensor(const at::Tensor& tensor, const ObservedOp& op) {
  OpStats stats(tensor, op.inputs);
  if (stats.tensor().numel == 0) return;
  if (op.site >= 0) show_to_verifier(op, stats);
  if (verify_only_) return;
  const std::string& op_name = watched_names_[op.op_index];
  std::vector<Finding> findings = policy_.judge_op_tensor(stats, op.phase, op_name);

  std::lock_guard<std::mutex> lock(mutex_);
  if (op.phase == Phase::Forward) {
    policy_.judge_against_baseline(op.op_index, op.location_id, stats.tensor().max_abs, findings);
  }
  const int64_t seq = seq_++;
  TensorRecord record;
  record.step = step_;
  record.seq = seq;
  record.phase = op.phase;
  record.op = op_name;
  record.location_id = op.location_id;
  record.dtype = c10::toString(tensor.scalar_type());
  record.shape = shape_of(tensor);
  record.stats = stats.tensor();
  enqueue(std::move(record));
  for (const Finding& finding : findings) raise(finding, op.phase, op_name, "", op.location_id, seq);
}

void Nanny::Impl::show_to_verifier(const ObservedOp& op, OpStats& stats) {
  const TensorStats* argument = op.phase == Phase::Forward && op.site_reads_argument && stats.input_count() > 0
                                    ? &stats.input(0)
                                    : nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!verifier_) return;
  verifier_->observe(static_cast<size_t>(op.site), step_, stats.tensor());
  if (argument) verifier_->observe_argument(static_cast<size_t>(op.site), step_, *argument);
}

void Nanny::Impl::raise(const Finding& finding, Phase phase, const std::string& op, const std::string& name,
                        int64_t location_id, int64_t seq) {
  // Called with mutex_ held.
  Alert alert;
  alert.step = step_;
  alert.type = finding.type;
  alert.severity = finding.severity;
  alert.phase = phase;
  alert.adaptive = finding.adaptive;
  alert.op = op;
  alert.name = name;
  alert.location = location_of(location_id);
  alert.value = finding.value;
  alert.threshold = finding.threshold;
  alert.message = finding.message;
  if (alerts_.size() < options_.alerts_in_memory) alerts_.push_back(alert);
  ++step_alerts_;
  policy_.note_alert(finding, phase, step_);
  enqueue(AlertRecord{alert, seq, location_id});

  const bool first_time = announced_.emplace(finding.type, location_id, name).second;
  if (options_.verbosity >= 2 || (options_.verbosity == 1 && first_time)) {
    std::ostringstream line;
    line << "mpnanny: step " << alert.step << ": " << to_string(alert.severity) << " " << to_string(alert.type);
    if (alert.location.known()) {
      line << " at " << std::filesystem::path(alert.location.file).filename().string() << ":" << alert.location.line;
    }
    if (!op.empty()) line << " (" << op << ", " << to_string(phase) << ")";
    if (!name.empty()) line << " (" << name << ", " << to_string(phase) << ")";
    line << ": " << alert.message << " [knowledge/alert-" << to_string(alert.type) << ".md]";
    std::cerr << line.str() << "\n";
  }
}

void Nanny::Impl::begin_step(int64_t step) {
  if (!active_.load() || in_step_) return;
  in_step_ = true;
  step_thread_ = std::this_thread::get_id();
  step_started_ = std::chrono::steady_clock::now();
  const std::optional<double> loss_scale = read_loss_scale();
  {
    // The hooks of a backward pass still running on another thread read these under the lock.
    std::lock_guard<std::mutex> lock(mutex_);
    step_ = step;
    seq_ = 0;
    step_alerts_ = 0;
    policy_.begin_step(loss_scale);
    step_gradients_.clear();
    dense_ = sampler_.in_dense_window(step);
    traced_ = sampler_.should_trace(step);
  }
  const bool verifying = verifier_ && steps_begun_++ < options_.verify_steps;
  verify_only_ = verifying && !traced_;
  if (!traced_ && !verifying) {
    // An implicit session may have switched the observer on for this step, in case.
    if (implicit_steps_) OpObserver::instance().set_tracing(false);
    return;
  }
  if (traced_ && model_ && options_.track_update_ratio) {
    at::RecordFunctionGuard no_observation(false);
    // Copies made in a step run under InferenceMode would be inference tensors, which a later
    // step outside it may not copy into. InferenceMode(false) turns grad mode on: NoGradGuard
    // after it turns it off again.
    const c10::InferenceMode not_inference(false);
    c10::NoGradGuard no_grad;
    // Copies kept from the previous traced step (dense tracing) are copied into: no allocation.
    const auto parameters = model_->named_parameters();
    weights_before_.resize(parameters.size());
    for (size_t i = 0; i < parameters.size(); ++i) {
      const at::Tensor& weight = parameters[i].value();
      at::Tensor& copy = weights_before_[i];
      if (copy.defined() && copy.sizes() == weight.sizes() && copy.dtype() == weight.dtype() &&
          copy.device() == weight.device()) {
        copy.copy_(weight);
      } else {
        copy = weight.clone();
      }
    }
  }
  observing_ = true;
  OpObserver::instance().set_tracing(true);
}

void Nanny::Impl::end_step() {
  if (!in_step_) return;
  in_step_ = false;
  if (!active_.load()) return;
  if (observing_.exchange(false)) OpObserver::instance().set_tracing(false);
  try {
    observe_loss_scale();
    if (traced_) {
      observe_parameters();
      const MemorySample memory = sample_memory();
      enqueue(MemoryRecord{step_, memory.rss_bytes, memory.cuda_allocated_bytes, memory.cuda_reserved_bytes,
                           memory.cuda_allocated_peak_bytes, memory.cuda_reserved_peak_bytes,
                           memory.cuda_alloc_retries});
    }
    StepRecord record;
    record.step = step_;
    record.traced = traced_;
    record.dense = dense_;
    record.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_started_).count();
    record.alert_count = step_alerts_;
    enqueue(record);
  } catch (const std::exception& exception) {
    switch_off(exception.what());
  }
}

std::optional<double> Nanny::Impl::read_loss_scale() const {
  if (!options_.loss_scale) return std::nullopt;
  try {
    const double scale = options_.loss_scale();
    if (std::isfinite(scale)) return scale;
  } catch (...) {
  }
  return std::nullopt;
}

void Nanny::Impl::observe_loss_scale() {
  const auto read = read_loss_scale();
  if (!read) return;
  const double scale = *read;
  const auto observation = policy_.judge_loss_scale(step_, scale);
  enqueue(LossScaleRecord{step_, scale, observation.skipped});
  if (observation.finding) {
    std::lock_guard<std::mutex> lock(mutex_);
    raise(*observation.finding, Phase::LossScale, "", "loss_scale", 0, -1);
  }
}

void Nanny::Impl::observe_parameters() {
  if (!model_) return;
  at::RecordFunctionGuard no_observation(false);
  c10::NoGradGuard no_grad;
  size_t index = 0;
  for (const auto& parameter : model_->named_parameters()) {
    const std::string& name = parameter.key();
    const at::Tensor& weight = parameter.value();
    const size_t weight_index = index++;
    if (!parameter_selected(name)) continue;

    const TensorStats weight_stats = compute_tensor_stats(weight);
    // Nothing read (no elements, or a dtype or layout the kernel does not read): nothing to store,
    // and above all no GRAD_VANISH for a norm nobody took.
    if (weight_stats.numel == 0) continue;
    std::optional<double> update_ratio;
    if (weight_index < weights_before_.size() && weights_before_[weight_index].sizes() == weight.sizes()) {
      const double weight_norm = weight_stats.norm();
      const double update_norm = l2_distance(weight, weights_before_[weight_index]);
      if (update_norm > 0.0 && weight_norm > 0.0) update_ratio = update_norm / weight_norm;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t weight_seq = seq_++;
    enqueue(TensorRecord{step_, weight_seq, Phase::Weight, "", name, 0, c10::toString(weight.scalar_type()),
                         shape_of(weight), weight_stats, update_ratio});
    if (const auto finding = policy_.judge_weights(weight_stats)) raise(*finding, Phase::Weight, "", name, 0, weight_seq);
    const auto captured = step_gradients_.find(name);
    if (captured == step_gradients_.end()) continue;
    const at::Tensor gradient = captured->second;
    const TensorStats gradient_stats = compute_tensor_stats(gradient);
    if (gradient_stats.numel == 0) continue;
    const int64_t gradient_seq = seq_++;
    enqueue(TensorRecord{step_, gradient_seq, Phase::Gradient, "", name, 0, c10::toString(gradient.scalar_type()),
                         shape_of(gradient), gradient_stats, std::nullopt});
    if (const auto finding = policy_.judge_gradient(name, gradient_stats)) {
      raise(*finding, Phase::Gradient, "", name, 0, gradient_seq);
    }
  }
  // Kept only when the next step is traced too: otherwise they would hold a second copy of the
  // weights until then.
  std::lock_guard<std::mutex> lock(mutex_);
  if (!(options_.trace_interval == 1 || sampler_.in_dense_window(step_ + 1))) weights_before_.clear();
  step_gradients_.clear();
}

bool Nanny::Impl::parameter_selected(const std::string& name) const {
  const bool excluded = std::any_of(options_.exclude_parameter_prefixes.begin(),
                                    options_.exclude_parameter_prefixes.end(),
                                    [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
  const int depth = static_cast<int>(std::count(name.begin(), name.end(), '.'));
  return !excluded && (options_.max_parameter_depth < 0 || depth <= options_.max_parameter_depth);
}

void Nanny::Impl::install_gradient_hooks() {
  if (!model_) return;
  for (const auto& parameter : model_->named_parameters()) {
    at::Tensor weight = parameter.value();
    if (!weight.requires_grad() || !parameter_selected(parameter.key())) continue;
    std::shared_ptr<HookTarget> target = hook_target_;
    std::string name = parameter.key();
    const unsigned handle = weight.register_hook([target, name](const at::Tensor& gradient) {
      if (Impl* impl = target->impl.load()) impl->on_gradient(name, gradient);
    });
    hooks_.emplace_back(weight, handle);
    hooked_parameters_.insert(weight.unsafeGetTensorImpl());
  }
}

void Nanny::Impl::remove_gradient_hooks() {
  hook_target_->impl = nullptr;
  for (auto& [weight, handle] : hooks_) {
    try {
      weight.remove_hook(handle);
    } catch (...) {
    }
  }
  hooks_.clear();
}

void Nanny::Impl::on_gradient(const std::string& name, const at::Tensor& gradient) {
  if (!active_.load()) return;
  try {
    if (in_step_ && traced_) {
      const MaskedFpExceptions masked;
      std::lock_guard<std::mutex> lock(mutex_);
      at::Tensor& stored = step_gradients_[name];
      // Several backward passes in one step (gradient accumulation) add up, as .grad does.
      if (stored.defined()) {
        at::RecordFunctionGuard no_observation(false);
        stored = stored + gradient;
      } else {
        stored = gradient;
      }
    }
    // watch() has no step loop: its step ends with the backward pass that brought this gradient,
    // once every node of that pass ran (a count of parameter gradients would carry steps over
    // where the model leaves a parameter unused, and file the pass's last nodes under the next
    // step).
    if (watch_mode_ && !watch_step_end_queued_.exchange(true)) {
      try {
        torch::autograd::Engine::get_default_engine().queue_callback([target = hook_target_] {
          if (Impl* impl = target->impl.load()) impl->end_watched_step();
        });
      } catch (...) {  // outside an engine's graph task (a hook called by hand): no pass to end
        watch_step_end_queued_ = false;
      }
    }
  } catch (...) {
  }
}

void Nanny::Impl::end_watched_step() {
  watch_step_end_queued_ = false;
  if (!active_.load()) return;
  const MaskedFpExceptions masked;
  try {
    const int64_t finished = step_;
    end_step();
    begin_step(finished + 1);
  } catch (const std::exception& exception) {
    switch_off(exception.what());
  } catch (...) {
    switch_off("unknown exception");
  }
}

void Nanny::Impl::start_watch_mode() {
  if (!active_.load() || !model_) return;
  watch_mode_ = true;
  begin_step(0);
}

void Nanny::Impl::record_scalar(const std::string& name, double value) {
  if (!active_.load()) return;
  enqueue(ScalarRecord{step_, name, value});
}

void Nanny::Impl::flush() {
  if (!writer_) return;
  writer_->flush();
  // A write that failed inside this flush must show in active() at once: a caller that flushes
  // and then checks active() takes "still active" to mean "committed".
  if (!writer_->ok()) switch_off("");
}

void Nanny::Impl::close() {
  if (closed_.exchange(true)) return;
  std::lock_guard<std::mutex> step_lock(step_signal_mutex_);
  if (implicit_steps_) {
    counting_steps_ = false;
    OpObserver::instance().set_step_counter(nullptr);
    Impl* self = this;
    g_implicit_session.compare_exchange_strong(self, nullptr);
  }
  try {
    if (in_step_) end_step();
  } catch (...) {
  }
  active_ = false;
  OpObserver::instance().detach(this);
  remove_gradient_hooks();
  try {
    report_verdicts();
  } catch (...) {
  }
  if (writer_) writer_->close();
}

void Nanny::Impl::report_verdicts() {
  std::unique_ptr<SiteVerifier> verifier;
  int64_t with_line = 0, without_line = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    verifier = std::move(verifier_);
    with_line = site_ops_with_line_;
    without_line = site_ops_without_line_;
  }
  if (!verifier) return;
  if (with_line == 0 && without_line > 0) {
    // Without a line no op can be matched to a site, and every site would read "never executed".
    std::cerr << "mpnanny: warning: site verification needs the program's line information: "
              << without_line << " op(s) of the flagged kinds ran, none with a source line (build with -g, e.g. "
                 "CMAKE_BUILD_TYPE=RelWithDebInfo); no verdicts are recorded\n";
    return;
  }
  const std::vector<SiteVerdict> verdicts = verifier->verdicts();
  bool stored = true;
  for (const SiteVerdict& verdict : verdicts) {
    SiteVerdictRecord record;
    record.site_id = verdict.site->id;
    record.check = verdict.site->check;
    record.file = verdict.site->file;
    record.line = verdict.site->line;
    record.function = verdict.site->function;
    record.verdict = to_string(verdict.verdict);
    record.evidence = verdict.evidence;
    record.steps_observed = verdict.steps_observed;
    record.worst_headroom = verdict.worst_headroom;
    if (verdict.value) {
      record.first_step = verdict.step;
      record.value = verdict.value;
    }
    stored = enqueue(std::move(record)) && stored;
  }
  std::cerr << SiteVerifier::format_table(verdicts);
  if (stored) std::cerr << "  (table site_verdicts in " << database_path_ << "; mpnanny sites shows it again)\n";
}

StepGuard::~StepGuard() { end(); }

void StepGuard::end() {
  if (nanny_) nanny_->end_step();
  nanny_ = nullptr;
}

Nanny::Nanny(std::shared_ptr<torch::nn::Module> model, Options options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options), Environment::read())) {}
Nanny::Nanny(Options options) : impl_(std::make_unique<Impl>(nullptr, std::move(options), Environment::read())) {}
Nanny::~Nanny() { close(); }

StepGuard Nanny::step(int64_t step) {
  begin_step(step);
  return StepGuard(this);
}

void Nanny::begin_step(int64_t step) {
  const MaskedFpExceptions masked;
  try {
    impl_->begin_step(step);
  } catch (const std::exception& exception) {
    impl_->switch_off(exception.what());
  } catch (...) {
    impl_->switch_off("unknown exception");
  }
}

void Nanny::end_step() {
  const MaskedFpExceptions masked;
  try {
    impl_->end_step();
  } catch (const std::exception& exception) {
    impl_->switch_off(exception.what());
  } catch (...) {
    impl_->switch_off("unknown exception");
  }
}

void Nanny::record_scalar(const std::string& name, double value) {
  const MaskedFpExceptions masked;
  try {
    impl_->record_scalar(name, value);
  } catch (...) {
  }
}

void Nanny::flush() {
  const MaskedFpExceptions masked;
  try {
    impl_->flush();
  } catch (...) {
  }
}

void Nanny::close() {
  const MaskedFpExceptions masked;
  try {
    if (impl_) impl_->close();
  } catch (...) {
  }
}

Nanny& watch(const std::shared_ptr<torch::nn::Module>& model, Options options) {
  static std::mutex watch_mutex;
  static Nanny* watched = nullptr;
  static bool warned_other_model = false;
  std::lock_guard<std::mutex> lock(watch_mutex);
  if (watched && !watched->impl_for_watch().closed()) {
    if (model.get() != watched->impl_for_watch().model() && !warned_other_model) {
      warned_other_model = true;
      std::cerr << "mpnanny: warning: watch() already watches another model in this process; the parameters "
                   "of this one are not watched. Give one mpnanny::Nanny a module that registers both.\n";
    }
    return *watched;
  }
  // The first call, or the one before was closed. Deliberately leaked: it must outlive every
  // static that training code might still run at exit (the atexit handler drains and closes it
  // first), and a closed one stays valid for whoever still holds it (kept reachable, so that a
  // leak checker does not report it).
  static std::vector<Nanny*>& closed_nannies = *new std::vector<Nanny*>;
  const bool first = watched == nullptr;
  if (!first) closed_nannies.push_back(watched);
  watched = new Nanny(model, std::move(options));
  warned_other_model = false;
  watched->impl_for_watch().start_watch_mode();
  if (first) std::atexit([] { watched->close(); });
  return *watched;
}

void start_verification_from_environment() {
  try {
    if (!Environment::verify_at_load()) return;
    // Deliberately leaked, like watch()'s nanny: training code may run ops until the very end; the
    // atexit handler reports the verdicts and closes it first.
    auto* session = new Nanny::Impl(nullptr, Options{}, Environment::read(), /*implicit_steps=*/true);
    g_implicit_session_kept = session;
    if (!session->active()) return;  // no sites (warned), disabled, or an error (warned)
    g_implicit_session = session;
    std::atexit([] {
      if (Nanny::Impl* implicit = g_implicit_session.load()) implicit->close();
    });
  } catch (const std::exception& exception) {
    warn_once_internal(exception.what());
  }
}

bool Nanny::active() const { return impl_->active(); }
std::vector<Alert> Nanny::alerts() const { return impl_->alerts(); }
std::string Nanny::database_path() const { return impl_->database_path(); }
const Options& Nanny::options() const { return impl_->options(); }

}  // namespace mpnanny
