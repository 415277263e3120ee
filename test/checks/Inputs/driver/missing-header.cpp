#include <torch/torch.h>
#include <nonexistent.h>

torch::Tensor f(torch::Tensor x) { return x; }
