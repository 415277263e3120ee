// Third-party code: never scanned by a whole-project scan.
#include <torch/torch.h>

torch::Tensor vendored(torch::Tensor x, torch::Tensor mask) {
  return x.to(torch::kHalf).masked_fill(mask, -1e9);
}
