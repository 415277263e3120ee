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

// Numbers and flags read through the missing header (absl::GetFlag, say) are only unknown, as
// run-time values are: the statements after them are checked; an expression with the error is not.
torch::Tensor after_flags_from_the_gap(torch::Tensor x) {
  bool wide = project::GetFlag(FLAGS_wide) > 0.0;
  long steps = project::GetFlag(FLAGS_steps);
  auto h = x.to(torch::kHalf);
  auto masked = h.masked_fill(h > 0, -1e9);
  auto unknown = h.masked_fill(h > project::GetFlag(FLAGS_cut), -1e9);
  return wide ? masked : unknown;
}

// A settings file read with <fstream> missing (std::ifstream only declared): the errors leave
// numbers unknown and touch no tensor, module or dtype, so the statements after them are checked.
#include <iosfwd>
struct Settings {
  int steps = 0;
  double lr = 0;
};
double read_number(std::ifstream &file, const char *key);
torch::Tensor read_tensor(std::ifstream &file, const char *key);
torch::Tensor after_settings_from_the_gap(torch::Tensor x, Settings &settings) {
  if (settings.steps > 0) {
    std::ifstream file("settings.json");
    auto lr = read_number(file, "lr");
    settings.lr = lr;
  }
  auto h = x.to(torch::kHalf);
  return h.masked_fill(h > 0, -1e9);
}

// The same file gives a tensor its value: what the statement meant to do to it is unknown.
torch::Tensor weights_from_the_gap(torch::Tensor x, Settings &settings) {
  auto h = x.to(torch::kHalf);
  if (settings.steps > 0) {
    std::ifstream file("weights.bin");
    auto w = read_tensor(file, "w");
    h = w;
  }
  return h.masked_fill(h > 0, -1e9);
}

// A statement after an error is checked when it reads nothing the erroneous statement may have
// changed: a function the missing header declares may change the tensors passed to it, and what
// is computed from them; the other values are as the compiler saw them.
torch::Tensor after_an_unknown_call(torch::Tensor x, torch::Tensor y) {
  auto h = x.to(torch::kHalf);
  project::normalize_in_place(h);
  auto g = y.to(torch::kHalf);
  auto safe = g.clamp_min(1e-12);
  auto unsure = h.clamp_min(1e-12);
  auto derived = h * 2;
  auto later = derived.masked_fill(derived > 0, -1e9);
  return safe + unsure + later;
}

// A LibTorch function whose argument holds an error (a dtype these headers lack) only read the
// tensors passed to it: what follows and reads them is checked.
torch::Tensor after_a_dtype_the_headers_lack(torch::Tensor input) {
  torch::Tensor out;
  out = torch::zeros_like(input, input.options().dtype(torch::kFloat8_e4m3fn));
  auto amax = input.to(torch::kHalf).abs().max();
  auto scale = (amax / 448.0f).clamp_min(1e-12);
  auto written = out.to(torch::kHalf).clamp_min(1e-12);
  return scale + written;
}

// A declaration Sema rejected may have lost what it named: every name in its text counts.
torch::Tensor after_a_rejected_declaration(torch::Tensor x, torch::Tensor y) {
  auto h = x.to(torch::kHalf);
  auto g = y.to(torch::kHalf);
  ProjectBuffer buffer(h, 4);
  auto kept = h.clamp_min(1e-12);
  auto other = g.clamp_min(1e-12);
  return kept + other;
}
