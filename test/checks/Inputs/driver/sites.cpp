#include <torch/torch.h>

torch::Tensor attention(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  auto a = h.masked_fill(mask, -1e9);
  auto b = h.masked_fill(mask, -1e9);
  return a + b + h.clamp(1e-9, 1);
}
