// The op observer: the process-wide RecordFunction callbacks that show a session the ATen ops a
// training runs, the names of the ops it watches, and what a fork() does to the sessions.
#ifndef MPNANNY_RUNTIME_OPOBSERVER_H
#define MPNANNY_RUNTIME_OPOBSERVER_H

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpnanny/Alert.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {

/// A watched op as observed: by its start and end callbacks in the forward pass, and by the post
/// hooks on its autograd nodes in the backward pass.
struct ObservedOp : at::ObserverContext {
  bool outermost = false;
  Phase phase = Phase::Forward;
  int32_t op_index = -1;
  int64_t location_id = 0;
  int64_t site = -1;                 // index in the SiteVerifier, when the op belongs to a verified site
  bool site_reads_argument = false;  // the site is judged on the op's input too (SiteVerifier::judges_argument)
  uint64_t first_sequence_nr = 0;
  bool hid_inner_ops = false;  // switched RecordFunction off on this thread until its end
  std::vector<at::Tensor> inputs;
  // A site's op: its first tensor input's type and its first scalar argument, for an op that
  // raises instead of returning (SiteVerifier::observe_failure).
  at::ScalarType site_input_dtype = at::ScalarType::Undefined;
  double site_scalar = std::numeric_limits<double>::quiet_NaN();
};

/// The ops a session watches, by index, and the index of a RecordFunction's op name, which every
/// thread caches by the name's address.
class WatchedOps {
 public:
  /// The session's list, final from here on. Threads drop the lookups they cached for another.
  void assign(std::vector<std::string> names);
  /// The op's index, or -1 where it is not watched.
  int32_t index_of(const char* name) const;
  const std::string& name(int32_t index) const { return names_[index]; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  int32_t index_uncached(const char* name) const;

  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> lookup_;
  uint64_t generation_ = 0;
};

/// The process-wide RecordFunction callback. It is registered once and stays registered
/// (removing a global callback is only safe when no other thread runs ops); between traced
/// steps it is disabled, so LibTorch does not even construct a RecordFunction for it.
class OpObserver {
 public:
  static OpObserver& instance();

  /// The implicit session's step counter: a second callback, without inputs, always on while
  /// that session runs. It is registered before the observing callback, and LibTorch runs global
  /// callbacks in registration order, so a step boundary is settled before the op is observed.
  void set_step_counter(Nanny::Impl* session);
  /// The session whose ops are observed: one at a time. False where another one is.
  bool attach(Nanny::Impl* session);
  void detach(Nanny::Impl* session);
  void set_tracing(bool on);
  /// A global callback makes LibTorch build a RecordFunction for every op on every thread, and the
  /// backward pass runs most of a step's ops (on the example model, bmm's CPU kernel alone runs
  /// thousands of select and as_strided ops, two thirds of them in backward nodes). The backward
  /// pass is observed through post hooks on the autograd nodes of the watched forward ops instead
  /// (BackwardHooks), so the callback goes off at the first node of a backward pass, and back on
  /// when the engine finishes it, for a later forward pass of the same step (gradient
  /// accumulation) and the next backward pass.
  void pause_for_backward();

  /// Every session of this process, for the fork handler, which the first one installs.
  static void add_session(Nanny::Impl* session);
  static void remove_session(Nanny::Impl* session);

 private:
  OpObserver() = default;
  void resume_after_backward();
  /// fork(): the child gets no session of the parent's. The callbacks stay registered (LibTorch's
  /// registry has its own lock, which another thread of the parent may have held); with no session
  /// they return at once, and a Nanny made in the child attaches as in any process.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork() { mutex_.unlock(); }
  void forget_sessions_after_fork();
  static void watch_for_fork();

  static std::unique_ptr<at::ObserverContext> on_counter_start(const at::RecordFunction& fn);
  static void on_counter_end(const at::RecordFunction&, at::ObserverContext* context);
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn);
  static void on_end(const at::RecordFunction& fn, at::ObserverContext* context);
  static void switch_on(at::CallbackHandle& handle);
  static void switch_off(at::CallbackHandle handle);

  std::atomic<Nanny::Impl*> session_{nullptr};
  std::atomic<Nanny::Impl*> step_counter_session_{nullptr};
  std::mutex mutex_;
  bool tracing_ = false;
  bool paused_for_backward_ = false;
  at::CallbackHandle handle_ = at::INVALID_CALLBACK_HANDLE;
  at::CallbackHandle counter_handle_ = at::INVALID_CALLBACK_HANDLE;
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_OPOBSERVER_H
