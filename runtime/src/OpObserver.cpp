// Reading RecordFunction inputs needs the same RecordFunction layout as LibTorch, which is built
// with NDEBUG (the CMake target defines it for every build type).
#ifndef NDEBUG
#error "mpnanny's op observer must be compiled with -DNDEBUG (RecordFunction's layout depends on it)"
#endif

#include "OpObserver.h"

#include <ATen/SequenceNumber.h>
#include <c10/core/GradMode.h>
#include <pthread.h>
#include <torch/csrc/autograd/engine.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>

#include "MaskedFpExceptions.h"
#include "NannyImpl.h"
#include "OpStats.h"

namespace mpnanny {

namespace {

// Per thread: how deep we are in watched ops (only the outermost is observed, so linear ->
// addmm is one observation).
thread_local int t_watched_depth = 0;

// Backward nodes running on this thread, as the implicit step counter sees them: ops inside them
// are the backward pass, not the start of the next step.
thread_local int t_step_signal_backward_depth = 0;

/// What the step counter hands to the end of a backward node: only that it was one.
struct BackwardNodeMark : at::ObserverContext {};

// The thread's answers of WatchedOps::index_of. exit() destroys the main thread's thread_locals
// before the atexit handlers that close watch()'s nanny and the verification session, and ops may
// still run in between: once the cache is gone, lookups go uncached.
thread_local bool t_name_cache_destroyed = false;
struct NameCache {
  std::unordered_map<const char*, int32_t> indices;
  uint64_t generation = 0;
  ~NameCache() { t_name_cache_destroyed = true; }
};
thread_local NameCache t_name_cache;

std::atomic<uint64_t> g_watched_ops_generation{0};

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

}  // namespace

void WatchedOps::assign(std::vector<std::string> names) {
  names_ = std::move(names);
  for (size_t i = 0; i < names_.size(); ++i) lookup_.emplace(names_[i], static_cast<int32_t>(i));
  generation_ = ++g_watched_ops_generation;
}

int32_t WatchedOps::index_uncached(const char* name) const {
  const auto found = lookup_.find(name);
  return found == lookup_.end() ? int32_t{-1} : found->second;
}

int32_t WatchedOps::index_of(const char* name) const {
  if (!name) return -1;
  if (t_name_cache_destroyed) return index_uncached(name);
  auto& indices = t_name_cache.indices;
  if (t_name_cache.generation != generation_) {
    indices.clear();
    t_name_cache.generation = generation_;
  }
  const auto cached = indices.find(name);
  // Op names come from the operator registry and keep their address; a hit is re-checked
  // because a string-named RecordFunction could reuse an address.
  if (cached != indices.end() && (cached->second < 0 || std::strcmp(names_[cached->second].c_str(), name) == 0)) {
    return cached->second;
  }
  const int32_t index = index_uncached(name);
  indices[name] = index;
  return index;
}

OpObserver& OpObserver::instance() {
  static OpObserver observer;
  return observer;
}

void OpObserver::set_step_counter(Nanny::Impl* session) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_counter_session_.store(session, std::memory_order_release);
  if (session && counter_handle_ == at::INVALID_CALLBACK_HANDLE) {
    counter_handle_ =
        at::addGlobalCallback(at::RecordFunctionCallback(&on_counter_start, &on_counter_end)
                                  .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  } else if (session) {
    at::reenableCallback(counter_handle_);
  } else if (counter_handle_ != at::INVALID_CALLBACK_HANDLE) {
    at::disableCallback(counter_handle_);
  }
}

bool OpObserver::attach(Nanny::Impl* session) {
  Nanny::Impl* expected = nullptr;
  return session_.compare_exchange_strong(expected, session);
}

void OpObserver::detach(Nanny::Impl* session) {
  Nanny::Impl* expected = session;
  if (session_.compare_exchange_strong(expected, nullptr)) set_tracing(false);
}

void OpObserver::set_tracing(bool on) {
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

void OpObserver::pause_for_backward() {
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

void OpObserver::resume_after_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Not paused any more: the step ended, or began again, while the backward pass ran.
  if (!tracing_ || !paused_for_backward_) return;
  paused_for_backward_ = false;
  switch_on(handle_);
}

std::unique_ptr<at::ObserverContext> OpObserver::on_counter_start(const at::RecordFunction& fn) {
  Nanny::Impl* session = instance().step_counter_session_.load(std::memory_order_acquire);
  if (!session) return nullptr;
  try {
    if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
      ++t_step_signal_backward_depth;
      session->on_backward_node_signal();
      return std::make_unique<BackwardNodeMark>();
    }
    // Ops inside backward nodes, the optimizer's update and evaluation code (grad mode off) belong
    // to the step in progress.
    if (t_step_signal_backward_depth > 0 || !c10::GradMode::is_enabled()) return nullptr;
    session->on_forward_op_signal();
  } catch (...) {
  }
  return nullptr;
}

void OpObserver::on_counter_end(const at::RecordFunction&, at::ObserverContext* context) {
  if (context && t_step_signal_backward_depth > 0) --t_step_signal_backward_depth;
}

std::unique_ptr<at::ObserverContext> OpObserver::on_start(const at::RecordFunction& fn) {
  Nanny::Impl* session = instance().session_.load(std::memory_order_acquire);
  if (!session) return nullptr;
  try {
    return session->on_op_start(fn);
  } catch (...) {
    return nullptr;  // an observer must never throw into the op it watches
  }
}

void OpObserver::on_end(const at::RecordFunction& fn, at::ObserverContext* context) {
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
void OpObserver::switch_on(at::CallbackHandle& handle) {
  if (handle == at::INVALID_CALLBACK_HANDLE) {
    handle = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                       .needsInputs(true)
                                       .needsOutputs(true)
                                       .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  } else {
    at::reenableCallback(handle);
  }
}

void OpObserver::switch_off(at::CallbackHandle handle) {
  if (handle != at::INVALID_CALLBACK_HANDLE) at::disableCallback(handle);
}

void OpObserver::forget_sessions_after_fork() {
  session_.store(nullptr);
  step_counter_session_.store(nullptr);
}

void OpObserver::add_session(Nanny::Impl* session) {
  watch_for_fork();
  std::lock_guard<std::mutex> lock(live_sessions().mutex);
  live_sessions().sessions.push_back(session);
}

void OpObserver::remove_session(Nanny::Impl* session) {
  std::lock_guard<std::mutex> lock(live_sessions().mutex);
  auto& sessions = live_sessions().sessions;
  sessions.erase(std::remove(sessions.begin(), sessions.end(), session), sessions.end());
}

/// A training program may fork (a launcher, a data worker, a checkpoint writer) after its Nanny
/// started. The child inherits the sessions but not their writer threads: it would hang at exit
/// destroying them, and its records would go nowhere. The child's sessions switch off with one
/// line on stderr (write(2): the child of a threaded process should call little else).
void OpObserver::watch_for_fork() {
  static std::once_flag registered;
  std::call_once(registered, [] {
    pthread_atfork(
        [] {
          live_sessions().mutex.lock();
          instance().lock_for_fork();
        },
        [] {
          instance().unlock_after_fork();
          live_sessions().mutex.unlock();
        },
        [] {
          instance().forget_sessions_after_fork();
          instance().unlock_after_fork();
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

// The session's side of the op path: observe -> stats (once per tensor) -> policy -> record.

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
  const int32_t op_index = watched_.index_of(fn.name());
  if (op_index < 0) return nullptr;
  auto context = std::make_unique<ObservedOp>();
  context->op_index = op_index;
  context->outermost = t_watched_depth == 0;
  ++t_watched_depth;
  if (!context->outermost) return context;
  // On a step observed for the verifier alone, only the sites' ops are located and measured.
  const bool for_sites = sites_.verifier && sites_.op_has_site[op_index];
  if (verify_only_ && !for_sites) {
    context->outermost = false;  // counted for nesting, not observed
    hide_inner_ops(*context);
    return context;
  }
  // The autograd nodes this op creates take the sequence numbers from here on (hook_backward_of).
  context->first_sequence_nr = at::sequence_number::peek();
  locate(*context, for_sites);
  if (context->site >= 0 && fn.needsInputs()) note_site_arguments(fn, *context);
  if ((!verify_only_ || context->site_reads_argument) && fn.needsInputs()) {
    for (const c10::IValue& input : fn.inputs()) {
      if (input.isTensor() && is_observable_tensor(input.toTensor())) context->inputs.push_back(input.toTensor());
    }
  }
  hide_inner_ops(*context);  // last: nothing after it may throw, or the ops would stay hidden
  return context;
}

void Nanny::Impl::locate(ObservedOp& op, bool for_sites) {
  std::lock_guard<std::mutex> lock(mutex_);
  op.location_id = locator_ ? recorder_.location_id_for(locator_->locate_caller()) : 0;
  if (for_sites && sites_.verifier) {
    const SourceLocation* location = recorder_.location(op.location_id);
    if (location && !location->file.empty() && location->line > 0) {
      ++sites_.ops_with_line;
      if (const auto site = sites_.verifier->match(location->file, location->line, watched_.name(op.op_index))) {
        op.site = static_cast<int64_t>(*site);
      }
    } else {
      ++sites_.ops_without_line;
    }
  }
  // The verifier judges some sites by the op's argument (log of a value fp16 flushes to 0).
  op.site_reads_argument = op.site >= 0 && SiteVerifier::judges_argument(watched_.name(op.op_index));
}

void Nanny::Impl::note_site_arguments(const at::RecordFunction& fn, ObservedOp& op) {
  for (const c10::IValue& input : fn.inputs()) {
    if (input.isTensor() && op.site_input_dtype == at::ScalarType::Undefined) {
      op.site_input_dtype = input.toTensor().scalar_type();
    } else if ((input.isDouble() || input.isInt()) && std::isnan(op.site_scalar)) {
      op.site_scalar = input.isDouble() ? input.toDouble() : static_cast<double>(input.toInt());
    }
  }
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
  if (!output) {
    // A site's op that raised: its end callback runs while the exception unwinds. In fp16,
    // masked_fill(-1e9) raises rather than overflowing.
    if (op.site >= 0 && op.phase == Phase::Forward && std::uncaught_exceptions() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (sites_.verifier) {
        sites_.verifier->observe_failure(static_cast<size_t>(op.site), step_, watched_.name(op.op_index),
                                         op.site_input_dtype, op.site_scalar);
      }
    }
    return;
  }
  if (options_.observe_backward && output->requires_grad() && (!verify_only_ || op.site >= 0 || sites_.opless)) {
    hooks_.hook_backward_of(*output, op);
  }
  observe_op_tensor(*output, op);
}

void Nanny::Impl::on_backward_gradients(ObservedOp op, const std::vector<uint32_t>& to_inputs,
                                        const std::vector<at::Tensor>& gradients) {
  if (!active_.load() || !observing_.load()) return;
  if (op.site < 0 && sites_.opless) {
    // A site whose check names no op (a backward() call without loss scaling) is judged by the
    // backward pass it starts: on the CPU the engine runs on the calling thread, so the first
    // user frame above this hook is that call's line.
    std::lock_guard<std::mutex> lock(mutex_);
    if (const SourceLocation* caller = locator_ && sites_.verifier ? locator_->locate_caller() : nullptr) {
      if (const auto site = sites_.verifier->match(caller->file, caller->line, watched_.name(op.op_index))) {
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
  if (op.site >= 0) show_to_verifier(op, stats, tensor.scalar_type());
  if (verify_only_) return;
  const std::string& op_name = watched_.name(op.op_index);
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
  recorder_.enqueue(std::move(record));
  for (const Finding& finding : findings) raise(finding, op.phase, op_name, "", op.location_id, seq);
}

void Nanny::Impl::show_to_verifier(const ObservedOp& op, OpStats& stats, at::ScalarType dtype) {
  const TensorStats* argument =
      op.phase == Phase::Forward && op.site_reads_argument && stats.input_count() > 0 ? &stats.input(0) : nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sites_.verifier) return;
  sites_.verifier->observe(static_cast<size_t>(op.site), step_, stats.tensor(), dtype);
  if (argument) sites_.verifier->observe_argument(static_cast<size_t>(op.site), step_, *argument);
}

}  // namespace mpnanny
