// Two functions in fp16; the diff tests change new_mask only (driver-diff.test).
#include <torch/torch.h>

torch::Tensor old_mask(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9); // a hazard no diff touches
}

torch::Tensor new_mask(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, 0);
}
