#include "mpnanny/GradScaler.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/optim/optimizer.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace mpnanny {

namespace {

// ATen's fused kernels exist for CUDA in every LibTorch this builds against; 1.13's CPU has none.
bool has_amp_kernels(const c10::Device& device) { return device.is_cuda(); }

// The messages are PyTorch's, so that a search for them finds its documentation and issues.
[[noreturn]] void missing_scale(const char* function) {
  throw std::runtime_error(std::string("Attempted ") + function +
                           " but _scale is None.  This may indicate your script did not use "
                           "scaler.scale(loss or outputs) earlier in the iteration.");
}

/// Hides the ops on the scale tensor from RecordFunction callbacks. The scale is the scaler's own
/// fp32 bookkeeping, never a value of the model: its 65536 (above fp16's 65504) filled in by
/// full/fill_, and its inverse, would otherwise be judged as the model's values by a monitor of
/// those ops (the nanny's OVERFLOW).
class ScaleBookkeeping {
 public:
  ScaleBookkeeping() : unobserved_(false) {}

 private:
  at::RecordFunctionGuard unobserved_;
};

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  if (!options_.enabled) return;
  if (!(options_.growth_factor > 1.0)) throw std::invalid_argument("The growth factor must be > 1.0.");
  if (!(options_.backoff_factor > 0.0 && options_.backoff_factor < 1.0))
    throw std::invalid_argument("The backoff factor must be < 1.0.");
  if (options_.growth_interval <= 0) throw std::invalid_argument("growth_interval must be a positive integer.");
}

void GradScaler::lazy_init(const c10::Device& device) {
  const ScaleBookkeeping bookkeeping;
  scale_ = at::full({}, options_.init_scale, at::TensorOptions().dtype(at::kFloat).device(device));
  growth_tracker_ =
      at::full({}, pending_growth_tracker_.value_or(0), at::TensorOptions().dtype(at::kInt).device(device));
}

at::Tensor GradScaler::scale(const at::Tensor& outputs) {
  if (!options_.enabled) return outputs;
  if (!scale_.defined()) lazy_init(outputs.device());
  return outputs * scale_.to(outputs.device(), /*non_blocking=*/true);
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) return;
  if (!scale_.defined()) missing_scale("unscale_");
  OptimizerState& state = per_optimizer_[&optimizer];
  if (state.stage == Stage::Unscaled)
    throw std::runtime_error("unscale_() has already been called on this optimizer since the last update().");
  if (state.stage == Stage::Stepped) throw std::runtime_error("unscale_() is being called after step().");

  // Inverse in fp64, then rounded once to fp32, as PyTorch does: for a power-of-two scale it is
  // exact, and for a loaded odd scale it is the closest float.
  const at::Tensor inv_scale = [&] {
    const ScaleBookkeeping bookkeeping;
    return scale_.to(at::kDouble).reciprocal().to(at::kFloat);
  }();

  // Group gradients by device (the fused kernel takes one device's list at a time).
  std::unordered_map<c10::Device, std::vector<at::Tensor>> grads_per_device;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& param : group.params()) {
      const at::Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      if (grad.scalar_type() == at::kHalf) throw std::runtime_error("Attempting to unscale FP16 gradients.");
      if (grad.is_sparse()) throw std::runtime_error("mpnanny::GradScaler: sparse gradients are not supported.");
      grads_per_device[grad.device()].push_back(grad);
    }
  }

  state.found_inf_per_device.clear();
  for (auto& [device, grads] : grads_per_device) {
    at::Tensor found_inf = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
    const at::Tensor device_inv_scale = inv_scale.to(device, /*non_blocking=*/true);
    if (has_amp_kernels(device)) {
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, device_inv_scale);
    } else {
      // What the kernel does per element: flag a non-finite value, multiply in fp32 (opmath)
      // regardless; the gradient keeps its dtype.
      bool any_non_finite = false;
      const float inv = inv_scale.item<float>();
      for (at::Tensor& grad : grads) {
        if (!any_non_finite && !at::isfinite(grad).all().item<bool>()) any_non_finite = true;
        if (grad.scalar_type() == at::kFloat || grad.scalar_type() == at::kDouble) {
          grad.mul_(inv);
        } else {
          grad.copy_(grad.to(at::kFloat).mul_(inv));
        }
      }
      if (any_non_finite) found_inf.fill_(1.0);
    }
    state.found_inf_per_device.emplace(device, found_inf);
  }
  state.stage = Stage::Unscaled;
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    last_step_skipped_ = false;
    return true;
  }
  if (!scale_.defined()) missing_scale("step");
  if (per_optimizer_[&optimizer].stage == Stage::Stepped)
    throw std::runtime_error("step() has already been called since the last update().");
  if (per_optimizer_[&optimizer].stage == Stage::Ready) unscale_(optimizer);
  OptimizerState& state = per_optimizer_[&optimizer];

  if (state.found_inf_per_device.empty()) throw std::runtime_error("No inf checks were recorded for this optimizer.");
  double found = 0.0;
  for (const auto& [device, found_inf] : state.found_inf_per_device) found += found_inf.item<double>();
  last_step_skipped_ = found != 0.0;
  if (last_step_skipped_) {
    ++skipped_steps_;
  } else {
    optimizer.step();
  }
  state.stage = Stage::Stepped;
  return !last_step_skipped_;
}

void GradScaler::update_scale(const at::Tensor& found_inf) {
  const ScaleBookkeeping bookkeeping;
  if (has_amp_kernels(scale_.device())) {
    at::_amp_update_scale_(scale_, growth_tracker_, found_inf, options_.growth_factor, options_.backoff_factor,
                           options_.growth_interval);
    return;
  }
  // _amp_update_scale_'s kernel: products in double, stored as float; growth only when the grown
  // scale is finite, and the tracker restarts either way.
  const float scale = scale_.item<float>();
  const int32_t tracker = growth_tracker_.item<int32_t>();
  if (found_inf.item<float>() != 0.0f) {
    scale_.fill_(static_cast<float>(static_cast<double>(scale) * options_.backoff_factor));
    growth_tracker_.fill_(0);
    return;
  }
  const int64_t successful = static_cast<int64_t>(tracker) + 1;
  if (successful == options_.growth_interval) {
    const float grown = static_cast<float>(static_cast<double>(scale) * options_.growth_factor);
    if (std::isfinite(grown)) scale_.fill_(grown);
    growth_tracker_.fill_(0);
  } else {
    growth_tracker_.fill_(successful);
  }
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (!scale_.defined()) missing_scale("update");
  at::Tensor found_inf_combined;
  for (const auto& [optimizer, state] : per_optimizer_) {
    for (const auto& [device, found_inf] : state.found_inf_per_device) {
      const at::Tensor here = found_inf.to(scale_.device(), /*non_blocking=*/true);
      found_inf_combined = found_inf_combined.defined() ? found_inf_combined + here : here.clone();
    }
  }
  if (!found_inf_combined.defined()) throw std::runtime_error("No inf checks were recorded prior to update.");
  update_scale(found_inf_combined);
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  if (!scale_.defined()) missing_scale("update");
  const ScaleBookkeeping bookkeeping;
  scale_.fill_(new_scale);
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled) return 1.0;
  return scale_.defined() ? scale_.item<double>() : options_.init_scale;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!options_.enabled) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : pending_growth_tracker_.value_or(0);
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!options_.enabled) return {};
  return {{"scale", get_scale()},
          {"growth_factor", options_.growth_factor},
          {"backoff_factor", options_.backoff_factor},
          {"growth_interval", static_cast<double>(options_.growth_interval)},
          {"_growth_tracker", static_cast<double>(get_growth_tracker())}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!options_.enabled) return;
  if (state.empty())
    throw std::runtime_error(
        "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  auto value = [&state](const char* key) {
    const auto found = state.find(key);
    if (found == state.end()) throw std::runtime_error(std::string("GradScaler state has no \"") + key + "\".");
    return found->second;
  };
  const double scale = value("scale");
  const int64_t tracker = static_cast<int64_t>(value("_growth_tracker"));
  options_.init_scale = scale;
  options_.growth_factor = value("growth_factor");
  options_.backoff_factor = value("backoff_factor");
  options_.growth_interval = static_cast<int64_t>(value("growth_interval"));
  pending_growth_tracker_ = tracker;
  const ScaleBookkeeping bookkeeping;
  if (scale_.defined()) scale_.fill_(scale);
  if (growth_tracker_.defined()) growth_tracker_.fill_(tracker);
}

}  // namespace mpnanny
