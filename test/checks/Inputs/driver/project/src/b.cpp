#include "attention.h"

torch::Tensor b_step(torch::Tensor x, torch::Tensor mask) {
  auto h = x.to(torch::kHalf);
  return mask_scores(x, mask) + h.clamp(1e-9, 1);
}
