// A Nanny's session: its start and end, its steps, and the public API. What happens inside a
// step's ops is the op path's (OpObserver.cpp); what becomes an alert is AlertPolicy's.
#include "mpnanny/Nanny.h"

#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <pthread.h>
#include <torch/csrc/autograd/engine.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "Environment.h"
#include "MaskedFpExceptions.h"
#include "MemoryStats.h"
#include "NannyImpl.h"
#include "VerifyFromEnvironment.h"
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

/// The session MPNANNY_VERIFY=1 started at load time, until a user's Nanny takes it over.
std::atomic<Nanny::Impl*> g_implicit_session{nullptr};
/// The same session for the whole process: once handed over or switched off it is not used again,
/// but an op callback on another thread may still be inside it, so it is never deleted, and this
/// keeps it referenced (a leak checker then sees memory kept on purpose, not lost). Volatile: the
/// program never reads it, and the compiler would otherwise drop the store.
Nanny::Impl* volatile g_implicit_session_kept = nullptr;

}  // namespace

Nanny::Impl::Impl(std::shared_ptr<torch::nn::Module> model, Options options, const Environment& environment,
                  bool implicit_steps)
    : options_(overridden(std::move(options), environment)),
      model_(std::move(model)),
      implicit_steps_(implicit_steps),
      recorder_(options_, [this] { switch_off(""); }),
      sampler_(options_.trace_interval, options_.dense_steps),
      policy_(options_, sampler_) {
  OpObserver::add_session(this);
  try {
    if (!options_.enabled) return;
    // Before anything that may fail: a rank whose nanny cannot start still takes part in the
    // agreement, or the others' would wait for it.
    if (options_.process_group) agreement_ = std::make_unique<RankAgreement>(options_.process_group);
    start(options_.watched_ops.empty() ? default_watched_ops() : options_.watched_ops);
  } catch (const std::exception& exception) {
    switch_off(exception.what());
  }
}

Nanny::Impl::~Impl() {
  close();
  OpObserver::remove_session(this);
}

void Nanny::Impl::start(std::vector<std::string> watched_names) {
  if (options_.verify) start_verification(watched_names);
  if (implicit_steps_ && !sites_.verifier) return;  // nothing to verify: the warning has been printed
  watched_.assign(std::move(watched_names));
  if (sites_.verifier) {
    const std::vector<std::string>& names = watched_.names();
    sites_.op_has_site.resize(names.size());
    for (size_t i = 0; i < names.size(); ++i) sites_.op_has_site[i] = sites_.verifier->any_site_watches(names[i]);
    sites_.opless = std::any_of(sites_.verifier->sites().begin(), sites_.verifier->sites().end(),
                                [](const Site& site) { return site.aten_ops.empty(); });
  }
  recorder_.describe_run(options_json(options_, watched_.names(), static_cast<bool>(sites_.verifier)));
  // Implicit sessions open the database with their first record, so that a program whose own
  // Nanny takes over before anything happened gets no empty run.
  if (implicit_steps_) {
    recorder_.open_with_first_record();
  } else if (!recorder_.open()) {
    return;
  }
  locator_ = std::make_unique<SourceLocator>();
  hooks_.point_at(this);
  if (model_) hooks_.hook_parameters(*model_, [this](const std::string& name) { return parameter_selected(name); });
  if (!OpObserver::instance().attach(this)) {
    std::cerr << "mpnanny: warning: another Nanny is already observing ops; this one records parameters, "
                 "loss scale and scalars only\n";
    sites_.verifier.reset();  // the sites' ops go to the session that observes ops
  }
  active_ = true;
  if (implicit_steps_) {
    counting_steps_ = true;
    OpObserver::instance().set_step_counter(this);
  }
}

void Nanny::Impl::start_verification(std::vector<std::string>& watched_names) {
  // A session MPNANNY_VERIFY=1 started before this one hands over what it has seen.
  if (!implicit_steps_) {
    if (Impl* implicit = g_implicit_session.exchange(nullptr)) sites_.verifier = implicit->hand_over();
  }
  if (!sites_.verifier) {
    const SitesFile& file = load_sites_once(options_.sites_file);
    if (file.sites.empty()) return;
    sites_.verifier = std::make_unique<SiteVerifier>(file.sites, options_.precision);
  }
  // The sites' ops must be observed even where the default list does not name them.
  for (const std::string& op : sites_.verifier->watched_ops()) {
    if (std::find(watched_names.begin(), watched_names.end(), op) == watched_names.end()) {
      watched_names.push_back(op);
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
  hooks_.point_at(nullptr);
  recorder_.close();  // what it recorded before the takeover stays, as its own run
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(sites_.verifier);
}

bool Nanny::Impl::forget_after_fork() {
  const bool was_active = active_.exchange(false);
  closed_ = true;
  counting_steps_ = false;
  hooks_.point_at(nullptr);
  recorder_.forget_after_fork();
  // A Nanny made in the child must not take over the parent's evidence.
  Impl* self = this;
  g_implicit_session.compare_exchange_strong(self, nullptr);
  return was_active;
}

bool Nanny::Impl::step_may_be_observed(int64_t step) const {
  // A forecast only, to switch the observer on before the first op of `step` runs; the Sampler
  // decides in begin_step.
  return (sites_.verifier && steps_begun_ < options_.verify_steps) || sampler_.in_dense_window(step) ||
         (options_.trace_interval > 0 && step % options_.trace_interval == 0);
}

void Nanny::Impl::on_backward_node_signal() {
  if (counting_steps_.load() && !backward_seen_.exchange(true) && step_may_be_observed(step_ + 1)) {
    OpObserver::instance().set_tracing(true);
  }
}

void Nanny::Impl::on_forward_op_signal() {
  if (implicit_step_open_.load(std::memory_order_acquire) && !backward_seen_.load(std::memory_order_acquire)) {
    return;
  }
  std::lock_guard<std::mutex> lock(step_signal_mutex_);
  if (!counting_steps_.load()) return;
  if (!implicit_step_open_.load()) {
    begin_step(0);
    implicit_step_open_ = true;
  } else if (backward_seen_.exchange(false)) {
    const int64_t next = step_ + 1;
    end_step();
    begin_step(next);
  }
}

void Nanny::Impl::switch_off(const std::string& why) {
  if (!why.empty()) warn_once_internal(why);
  active_ = false;
  counting_steps_ = false;
  OpObserver::instance().detach(this);
}

void Nanny::Impl::raise(const Finding& finding, Phase phase, const std::string& op, const std::string& name,
                        int64_t location_id, int64_t seq) {
  Alert alert;
  alert.step = step_;
  alert.type = finding.type;
  alert.severity = finding.severity;
  alert.phase = phase;
  alert.adaptive = finding.adaptive;
  alert.op = op;
  alert.name = name;
  if (const SourceLocation* location = recorder_.location(location_id)) alert.location = *location;
  alert.value = finding.value;
  alert.threshold = finding.threshold;
  alert.message = finding.message;
  ++step_alerts_;
  if (finding.severity == Severity::Error) report_.error = true;
  policy_.note_alert(finding, phase, step_);
  recorder_.record_alert(alert, seq, location_id);
}

std::vector<Alert> Nanny::Impl::alerts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorder_.alerts();
}

void Nanny::Impl::begin_step(int64_t step) {
  if (in_step_ || off_step_open_ || paused_.load()) return;
  if (!active_.load()) {
    // Switched off in a process group: it still counts the steps every rank agrees to trace.
    if (agreement_ && !closed_.load()) {
      off_step_open_ = true;
      std::lock_guard<std::mutex> lock(mutex_);
      step_ = step;
      traced_ = sampler_.should_trace(step);
    }
    return;
  }
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
  const bool verifying = sites_.verifier && steps_begun_++ < options_.verify_steps;
  verify_only_ = verifying && !traced_;
  if (!traced_ && !verifying) {
    // An implicit session may have switched the observer on for this step, in case.
    if (implicit_steps_) OpObserver::instance().set_tracing(false);
    return;
  }
  if (traced_ && model_ && options_.track_update_ratio) copy_weights_before_update();
  observing_ = true;
  OpObserver::instance().set_tracing(true);
}

void Nanny::Impl::copy_weights_before_update() {
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

void Nanny::Impl::end_step() {
  if (off_step_open_) {
    off_step_open_ = false;
    if (traced_ && agreement_) agree_with_group(/*observed=*/false);
    return;
  }
  if (!in_step_) return;
  in_step_ = false;
  if (!active_.load()) {
    if (traced_ && agreement_) agree_with_group(/*observed=*/false);
    return;
  }
  if (observing_.exchange(false)) OpObserver::instance().set_tracing(false);
  bool agreed = false;
  try {
    observe_loss_scale();
    if (traced_) {
      observe_parameters();
      if (agreement_) observe_reduced_gradients();
      const MemorySample memory = sample_memory();
      recorder_.enqueue(MemoryRecord{step_, memory.rss_bytes, memory.cuda_allocated_bytes, memory.cuda_reserved_bytes,
                                     memory.cuda_allocated_peak_bytes, memory.cuda_reserved_peak_bytes,
                                     memory.cuda_alloc_retries});
      if (agreement_) {
        agreed = true;
        agree_with_group(/*observed=*/true);
      }
    }
    StepRecord record;
    record.step = step_;
    record.traced = traced_;
    record.dense = dense_;
    record.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_started_).count();
    record.alert_count = step_alerts_;
    recorder_.enqueue(record);
  } catch (const std::exception& exception) {
    switch_off(exception.what());
  }
  // Whatever failed above, the other ranks wait for this one's report.
  if (traced_ && agreement_ && !agreed) agree_with_group(/*observed=*/false);
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
  recorder_.enqueue(LossScaleRecord{step_, scale, observation.skipped});
  std::lock_guard<std::mutex> lock(mutex_);
  report_.loss_scale = scale;
  report_.skipped = report_.skipped || observation.skipped;
  if (observation.finding) raise(*observation.finding, Phase::LossScale, "", "loss_scale", 0, -1);
}

void Nanny::Impl::observe_parameters() {
  if (!model_) return;
  at::RecordFunctionGuard no_observation(false);
  c10::NoGradGuard no_grad;
  size_t index = 0;
  for (const auto& parameter : model_->named_parameters()) {
    const size_t weight_index = index++;
    if (parameter_selected(parameter.key())) observe_parameter(parameter.key(), parameter.value(), weight_index);
  }
  // Kept only when the next step is traced too: otherwise they would hold a second copy of the
  // weights until then.
  std::lock_guard<std::mutex> lock(mutex_);
  if (!(options_.trace_interval == 1 || sampler_.in_dense_window(step_ + 1))) weights_before_.clear();
  step_gradients_.clear();
}

void Nanny::Impl::observe_parameter(const std::string& name, const at::Tensor& weight, size_t weight_index) {
  const TensorStats weight_stats = compute_tensor_stats(weight);
  // Nothing read (no elements, or a dtype or layout the kernel does not read): nothing to store,
  // and above all no GRAD_VANISH for a norm nobody took.
  if (weight_stats.numel == 0) return;
  std::optional<double> update_ratio;
  if (weight_index < weights_before_.size() && weights_before_[weight_index].sizes() == weight.sizes()) {
    const double weight_norm = weight_stats.norm();
    const double update_norm = l2_distance(weight, weights_before_[weight_index]);
    if (update_norm > 0.0 && weight_norm > 0.0) update_ratio = update_norm / weight_norm;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t weight_seq = seq_++;
  recorder_.enqueue(TensorRecord{step_, weight_seq, Phase::Weight, "", name, 0, c10::toString(weight.scalar_type()),
                                 shape_of(weight), weight_stats, update_ratio});
  if (const auto finding = policy_.judge_weights(weight_stats)) raise(*finding, Phase::Weight, "", name, 0, weight_seq);
  const auto captured = step_gradients_.find(name);
  if (captured == step_gradients_.end()) return;
  const at::Tensor gradient = captured->second;
  const TensorStats gradient_stats = compute_tensor_stats(gradient);
  if (gradient_stats.numel == 0) return;
  const std::optional<BadValue> bad = worst_value(gradient_stats, options_.precision);
  if (bad > report_.bad_before) {  // a value beats none
    report_.bad_before = bad;
    report_.bad_parameter = static_cast<int64_t>(weight_index);
  }
  const int64_t gradient_seq = seq_++;
  recorder_.enqueue(TensorRecord{step_, gradient_seq, Phase::Gradient, "", name, 0,
                                 c10::toString(gradient.scalar_type()), shape_of(gradient), gradient_stats,
                                 std::nullopt});
  if (const auto finding = policy_.judge_gradient(name, gradient_stats)) {
    raise(*finding, Phase::Gradient, "", name, 0, gradient_seq);
  }
}

bool Nanny::Impl::parameter_selected(const std::string& name) const {
  const bool excluded =
      std::any_of(options_.exclude_parameter_prefixes.begin(), options_.exclude_parameter_prefixes.end(),
                  [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
  const int depth = static_cast<int>(std::count(name.begin(), name.end(), '.'));
  return !excluded && (options_.max_parameter_depth < 0 || depth <= options_.max_parameter_depth);
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
        torch::autograd::Engine::get_default_engine().queue_callback([target = hooks_.target()] {
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
  if (!active_.load() || paused_.load()) return;
  recorder_.enqueue(ScalarRecord{step_, name, value});
}

void Nanny::Impl::flush() { recorder_.flush(); }

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
  hooks_.unhook_parameters();
  try {
    report_verdicts();
  } catch (...) {
  }
  recorder_.close();
}

void Nanny::Impl::pause() {
  if (closed_.load() || paused_.exchange(true)) return;
  std::lock_guard<std::mutex> step_lock(step_signal_mutex_);
  if (in_step_ || off_step_open_) end_step();
  if (!active_.load()) return;
  // Removed, not silenced: a hook that returns at once still costs a call per parameter per
  // backward pass, and a paused nanny is meant to cost nothing.
  hooks_.unhook_parameters();
}

void Nanny::Impl::resume() {
  if (!paused_.load()) return;
  std::lock_guard<std::mutex> step_lock(step_signal_mutex_);
  paused_ = false;
  if (closed_.load() || !active_.load()) return;
  hooks_.point_at(this);
  if (model_) hooks_.hook_parameters(*model_, [this](const std::string& name) { return parameter_selected(name); });
  // watch() has no step loop: the next backward pass ends the step it opens here.
  if (watch_mode_) begin_step(step_ + 1);
}

void Nanny::Impl::report_verdicts() {
  std::unique_ptr<SiteVerifier> verifier;
  int64_t with_line = 0, without_line = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    verifier = std::move(sites_.verifier);
    with_line = sites_.ops_with_line;
    without_line = sites_.ops_without_line;
  }
  if (!verifier) return;
  if (with_line == 0 && without_line > 0) {
    // Without a line no op can be matched to a site, and every site would read "never executed".
    std::cerr << "mpnanny: warning: site verification needs the program's line information: " << without_line
              << " op(s) of the flagged kinds ran, none with a source line (build with -g, e.g. "
                 "CMAKE_BUILD_TYPE=RelWithDebInfo); no verdicts are recorded\n";
    return;
  }
  const std::vector<SiteVerdict> verdicts = verifier->verdicts();
  bool stored = true;
  for (const SiteVerdict& verdict : verdicts) {
    SiteVerdictRow record;
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
    stored = recorder_.enqueue(std::move(record)) && stored;
  }
  std::cerr << SiteVerifier::format_table(verdicts);
  if (stored) {
    std::cerr << "  (table site_verdicts in " << recorder_.database_path() << "; mpnanny sites shows it again)\n";
  }
}

namespace {

/// The calls that change what the nanny does: an error in one switches it off, with a warning,
/// and never reaches the training.
template <typename Call>
void guarded(Nanny::Impl& impl, Call&& call) {
  const MaskedFpExceptions masked;
  try {
    call();
  } catch (const std::exception& exception) {
    impl.switch_off(exception.what());
  } catch (...) {
    impl.switch_off("unknown exception");
  }
}

}  // namespace

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
  guarded(*impl_, [&] { impl_->begin_step(step); });
}

void Nanny::end_step() {
  guarded(*impl_, [&] { impl_->end_step(); });
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

void Nanny::pause() {
  guarded(*impl_, [&] { impl_->pause(); });
}

void Nanny::resume() {
  guarded(*impl_, [&] { impl_->resume(); });
}

bool Nanny::paused() const { return impl_->paused(); }
bool Nanny::active() const { return impl_->active(); }
std::vector<Alert> Nanny::alerts() const { return impl_->alerts(); }
std::string Nanny::database_path() const { return impl_->database_path(); }
const Options& Nanny::options() const { return impl_->options(); }

}  // namespace mpnanny
