// Scanned with flags given by hand after `--` that name no LibTorch folder.
#include <torch/torch.h>
#ifdef WANT_AUTO_ONLY
#include <auto-torch-only.h>
#endif

torch::Tensor mask_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}
