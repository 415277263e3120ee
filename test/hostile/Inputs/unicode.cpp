// Unicode identifiers, strings and comments before the risky call on the same line: columns are
// byte columns, as clang counts them.
#include <torch/torch.h>

torch::Tensor 概率头(torch::Tensor 输入) {
  auto h半 = 输入.to(torch::kHalf);
  /* «ß» */ auto π = torch::log(torch::softmax(h半, 1)); // HOSTILE-FINDING
  return π;
}

torch::Tensor Ωmega(torch::Tensor x) {
  const char *label = "ünïcödé ✓";
  (void)label;
  return torch::log(torch::softmax(x.to(torch::kHalf), 1)); // HOSTILE-FINDING
}
