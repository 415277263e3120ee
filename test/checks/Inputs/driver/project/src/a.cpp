#include "attention.h"

torch::Tensor a_step(torch::Tensor x, torch::Tensor mask) {
  auto h = x.to(torch::kHalf);
  return mask_scores(x, mask) + h.masked_fill(mask, -1e10);
}
