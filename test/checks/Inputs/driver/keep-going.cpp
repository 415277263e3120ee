// A project header that is not there: the functions that parsed are still checked.
#include <torch/torch.h>
#include "project/not_installed.h"

torch::Tensor before_the_gap(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return h.masked_fill(h > 0, -1e9);
}

// Uses a type of the missing header: not checked, and counted.
torch::Tensor uses_missing_type(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  ProjectConfig config(h);
  return h.masked_fill(h > 0, -1e9);
}

torch::Tensor after_the_gap(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return h.clamp_min(1e-12);
}

// Clang stops instantiating templates after a fatal error: only a parse that keeps going
// sees inside this one.
template <typename T> T floor_at_eps(T x) {
  auto h = x.to(torch::kHalf);
  return h.clamp_min(1e-12);
}
torch::Tensor through_a_template(torch::Tensor x) { return floor_at_eps(x); }
