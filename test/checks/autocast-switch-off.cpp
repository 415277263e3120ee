// A switch that turns autocast off without clearing its cache, in a unit that updates weights
// and where nothing clears the cache: a binding's "autocast off" command, a scope guard's
// destructor. Python's autocast exit clears the cache (autocast_mode.py, __exit__); C++'s
// switch does not, so the forward after the next switch-on reuses weights cast before the step.
// The unit-wide conditions each get a run of their own, with a macro that breaks one of them.
// RUN: %mpnanny_check --checks='-*,mpnanny-autocast-cache' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-autocast-cache' %s -- %check_flags | %FileCheckAll %s
// RUN: %mpnanny_check --checks='-*,mpnanny-autocast-cache' %s -- %check_flags -DCLEARS_ELSEWHERE | %FileCheckAll %s --check-prefix=SILENT --allow-empty
// RUN: %mpnanny_check --checks='-*,mpnanny-autocast-cache' %s -- %check_flags -DINFERENCE_ONLY | %FileCheckAll %s --check-prefix=SILENT --allow-empty
// RUN: %mpnanny_check --checks='-*,mpnanny-autocast-cache' %s -- %check_flags -DCACHE_OFF | %FileCheckAll %s --check-prefix=SILENT --allow-empty
// RUN: %mpnanny_check --checks='-*,mpnanny-autocast-cache' %s -- %check_flags -DBF16_PARAMETERS | %FileCheckAll %s --check-prefix=SILENT --allow-empty
// SILENT-NOT: warning:

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

// A binding's commands: each is called from a script, so no loop of ours holds them.
#ifdef BF16_PARAMETERS
struct Trainer {
  Net net_;
  std::unique_ptr<torch::optim::Adam> opt_;
  Trainer() {
    net_->to(torch::kBFloat16);
    opt_ = std::make_unique<torch::optim::Adam>(net_->parameters());
  }
  void step() { opt_->step(); }
};
#elif !defined(INFERENCE_ONLY)
void optimizer_step_command(torch::optim::Adam &opt) { opt.step(); }
#endif

void autocast_enable_command(bool cpu) {
  if (!cpu)
    at::autocast::set_autocast_enabled(at::kCUDA, true);
  else
    at::autocast::set_autocast_enabled(at::kCPU, true);
}

void autocast_disable_command(bool cpu) {
  if (cpu)
    at::autocast::set_autocast_enabled(at::kCPU, false);
// CHECK: :[[@LINE-1]]:5: warning: at::autocast::set_autocast_enabled turns autocast off but keeps its autocast-fp16 weight cache, and nothing in this unit clears it: after torch::optim::Adam::step (line [[#@LINE-13]]) changes the weights{{.*}} [mpnanny-autocast-cache]
// CHECK: :[[@LINE-2]]:5: note: call at::autocast::clear_cache() when switching autocast off
// CHECK: :[[#@LINE-10]]:5: note: autocast-fp16 context: autocast is enabled here
  else
    at::autocast::set_autocast_enabled(at::kCUDA, false);
// CHECK: :[[@LINE-1]]:5: warning: at::autocast::set_autocast_enabled turns autocast off{{.*}} [mpnanny-autocast-cache]
// CHECK: :[[@LINE-2]]:5: note: call at::autocast::clear_cache()
// CHECK: note: autocast-fp16 context
}

// A scope guard that only flips the switch back.
struct AutocastScope {
  AutocastScope() { at::autocast::set_enabled(true); }
  ~AutocastScope() { at::autocast::set_enabled(false); }
// CHECK: :[[@LINE-1]]:22: warning: at::autocast::set_enabled turns autocast off{{.*}} [mpnanny-autocast-cache]
// CHECK: :[[@LINE-2]]:22: note: call at::autocast::clear_cache()
// CHECK: note: autocast-fp16 context
};

// Restoring a saved state, or switching on, turns nothing off that this unit switched on.
void nested(Net net, torch::Tensor x) {
  bool was = at::autocast::is_enabled();
  at::autocast::set_enabled(true);
  net(x);
  at::autocast::set_enabled(was);
}

#ifdef CLEARS_ELSEWHERE
void autocast_clear_command() { at::autocast::clear_cache(); }
#endif
#ifdef CACHE_OFF
void no_cache() { at::autocast::set_autocast_cache_enabled(false); }
#endif
