// Mock of mpnanny's loss scaler for the check tests: the API that the runtime's
// mpnanny::GradScaler exposes, modelled on torch.amp.GradScaler (LibTorch has none,
// pytorch/pytorch#44710). The checks recognize it by name.
#pragma once
#include <torch/torch.h>

namespace mpnanny {

struct GradScalerOptions {
  GradScalerOptions() {}
  TORCH_ARG(double, init_scale) = 65536.0;
  TORCH_ARG(double, growth_factor) = 2.0;
  TORCH_ARG(double, backoff_factor) = 0.5;
  TORCH_ARG(int64_t, growth_interval) = 2000;
  TORCH_ARG(bool, enabled) = true;
};

class GradScaler {
public:
  explicit GradScaler(GradScalerOptions options = {}) {}
  GradScaler(double init_scale, double growth_factor = 2.0, double backoff_factor = 0.5,
             int64_t growth_interval = 2000, bool enabled = true) {}
  torch::Tensor scale(const torch::Tensor &loss);
  void unscale_(torch::optim::Optimizer &optimizer);
  void step(torch::optim::Optimizer &optimizer);
  void update(torch::optional<double> new_scale = torch::nullopt);
  double get_scale() const;
};

} // namespace mpnanny
