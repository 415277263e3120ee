// Does not compile: an unknown type, a missing semicolon and an unclosed brace. The risky call
// before them is still reported; the file's errors come with file:line:col and exit code 3.
#include <torch/torch.h>

torch::Tensor fine(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return torch::log(torch::softmax(h, 1)); // HOSTILE-FINDING
}

NoSuchType broken(torch::Tensor x) {
  int missing = 1
  return x;

struct Unclosed {
