// Included by both translation units: its finding must be reported once.
#pragma once
#include <torch/torch.h>

inline torch::Tensor mask_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}
