#include <torch/torch.h>

// An op the bundled rules do not know; rules/ in a copy gets one more file that lists it.
namespace torch {
Tensor frobnicate(const Tensor &self);
}

torch::Tensor half_step(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return torch::frobnicate(h);
}

torch::Tensor fp32_step(torch::Tensor x) { return torch::frobnicate(x); }
