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

// The statements before a function's first error are checked: nothing that runs after them can
// have flowed into them.
torch::Tensor hazard_before_the_error(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto masked = h.masked_fill(h > 0, -1e9);
  ProjectConfig config(masked);
  return masked;
}

// The error is inside the loop that holds the hazard: a later iteration's statements run before
// it, so it is not checked.
torch::Tensor hazard_in_a_loop_with_an_error(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  for (int i = 0; i < 2; ++i) {
    h = h.masked_fill(h > 0, -1e9);
    ProjectConfig config(h);
  }
  return h;
}
