#include <torch/torch.h>

torch::Tensor parsed(torch::Tensor x, torch::Tensor mask) {
  auto h = x.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}

torch::Tensor broken(torch::Tensor x) {
  return x +* ;
}
