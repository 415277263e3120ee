// A fill value fp16 cannot hold: the clang-tidy hook must stop the build here.
#include <torch/torch.h>

torch::Tensor mask_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9); // HAZARD
}
