// Includes a header that does not exist: reported with its file:line:col, exit code 3.
#include <torch/torch.h>
#include "no/such/header.h"

torch::Tensor head(torch::Tensor x) {
  return torch::log(torch::softmax(x.to(torch::kHalf), 1)); // HOSTILE-FINDING
}
