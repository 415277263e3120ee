// A user header included with angle brackets through -I: user code, so it stays in the
// traversal scope and its finding is reported, cached or not.
#pragma once
#include <torch/torch.h>

inline torch::Tensor mask_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}
