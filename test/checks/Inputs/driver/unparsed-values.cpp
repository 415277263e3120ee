// A value the parse lost reaches a helper: what it holds is unknown, and the project's precision
// (fp16 here, --precision=fp16) is not assumed for it.
#include <torch/torch.h>
#include "npu/not_installed.h"

struct Gate {
  torch::Tensor weight = torch::zeros({4, 4}, torch::kFloat32);

  torch::Tensor route(const torch::Tensor &logits) const {
    auto scores = torch::relu(logits).sqrt();
    return scores / scores.sum(-1, true).clamp_min(1e-20);
  }
  torch::Tensor route_parsed(const torch::Tensor &logits) const {
    auto scores = torch::relu(logits).sqrt();
    return scores / scores.sum(-1, true).clamp_min(1e-20);
  }
  torch::Tensor forward(const torch::Tensor &x) {
    auto input = x.to(torch::kFloat32);
    auto logits = npu::linear(input, weight);
    auto routed = route(logits);
    auto parsed = route_parsed(x);
    return parsed;
  }
};
