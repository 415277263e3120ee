// mpnanny::GradScaler: dynamic loss scaling for LibTorch, with torch.amp.GradScaler's semantics.
//
// LibTorch's C++ frontend has none (pytorch/pytorch#44710), so C++ users hand-roll one and get
// the corner cases wrong (clipping scaled gradients, unscaling twice, skipping steps without
// backing off). This one follows torch/amp/grad_scaler.py:
//
//   mpnanny::GradScaler scaler;                       // 65536, x2 every 2000 good steps, x0.5 on inf
//   mpnanny::Nanny nanny(model, {.loss_scale = mpnanny::loss_scale_of(scaler)});
//   for (...) {
//     auto guard = nanny.step(step);
//     optimizer.zero_grad();
//     scaler.scale(loss).backward();
//     scaler.unscale_(optimizer);                     // only if gradients are clipped/inspected
//     torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
//     scaler.step(optimizer);                         // skipped when a gradient is inf/NaN
//     scaler.update();
//   }
//
// On CUDA it runs ATen's fused _amp_ kernels (no host synchronization except the one step()
// needs to decide whether to skip). LibTorch 1.13 has no CPU kernels for them, so CPU tensors
// take a plain-ATen path that computes the same values.
#ifndef MPNANNY_GRADSCALER_H
#define MPNANNY_GRADSCALER_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace torch::optim {
class Optimizer;
}

namespace mpnanny {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  /// Disabled: scale() returns its argument, step() just steps, get_scale() is 1.
  bool enabled = true;
};

class GradScaler {
 public:
  GradScaler() : GradScaler(GradScalerOptions{}) {}
  /// Throws std::invalid_argument for growth_factor <= 1, backoff_factor outside (0, 1) or
  /// growth_interval <= 0, as PyTorch's asserts do.
  explicit GradScaler(GradScalerOptions options);

  /// outputs * scale. The scale tensor is created on the device of the first tensor scaled.
  at::Tensor scale(const at::Tensor& outputs);

  /// Divides the optimizer's gradients by the scale in place (inverse computed in fp64) and
  /// records whether any of them was inf/NaN. Throws std::runtime_error when called twice before
  /// update(), after step(), or on fp16 gradients (fp16 parameters have no fp32 master copy:
  /// unscaled updates underflow; pytorch#74739).
  void unscale_(torch::optim::Optimizer& optimizer);

  /// Unscales if unscale_ was not called, then steps the optimizer unless a gradient was
  /// inf/NaN. Returns whether the optimizer stepped. Throws std::runtime_error when called twice
  /// before update().
  bool step(torch::optim::Optimizer& optimizer);

  /// Backs off after a step with inf/NaN gradients, grows after growth_interval clean steps,
  /// and forgets the per-optimizer state. Throws std::runtime_error if no optimizer was
  /// unscaled since the last update.
  void update();
  /// Sets the scale directly (PyTorch's update(new_scale)); the growth tracker is kept.
  void update(double new_scale);

  /// The current scale (init_scale before the first scale() call; 1 when disabled). Reads the
  /// device value: a synchronization on CUDA, as in PyTorch.
  double get_scale() const;
  int64_t get_growth_tracker() const;
  double get_growth_factor() const { return options_.growth_factor; }
  double get_backoff_factor() const { return options_.backoff_factor; }
  int64_t get_growth_interval() const { return options_.growth_interval; }
  void set_growth_factor(double value) { options_.growth_factor = value; }
  void set_backoff_factor(double value) { options_.backoff_factor = value; }
  void set_growth_interval(int64_t value) { options_.growth_interval = value; }
  bool is_enabled() const { return options_.enabled; }

  /// Steps skipped because a gradient was inf/NaN, since construction (not saved in the state:
  /// it describes this run).
  int64_t skipped_steps() const { return skipped_steps_; }
  /// Whether the last step() call skipped the optimizer step.
  bool last_step_skipped() const { return last_step_skipped_; }

  /// PyTorch's state_dict keys: "scale", "growth_factor", "backoff_factor", "growth_interval",
  /// "_growth_tracker". Empty when disabled.
  std::map<std::string, double> state_dict() const;
  /// Throws std::runtime_error on an empty state (saved from a disabled scaler), as PyTorch does.
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerState {
    Stage stage = Stage::Ready;
    /// One 0-dim float tensor per gradient device: 1 if a gradient there was inf/NaN.
    std::unordered_map<c10::Device, at::Tensor> found_inf_per_device;
  };

  void lazy_init(const c10::Device& device);
  void update_scale(const at::Tensor& found_inf);

  GradScalerOptions options_;
  at::Tensor scale_;           // float32, 0-dim; undefined until the first scale()
  at::Tensor growth_tracker_;  // int32, 0-dim, on scale_'s device
  // Loaded before the first scale(): applied when the tensors are created.
  std::optional<int64_t> pending_growth_tracker_;
  std::unordered_map<const torch::optim::Optimizer*, OptimizerState> per_optimizer_;
  int64_t skipped_steps_ = 0;
  bool last_step_skipped_ = false;
};

}  // namespace mpnanny

#endif  // MPNANNY_GRADSCALER_H
