#include "amp.h"
#include <ATen/autocast_mode.h>

// CPU autocast to fp16, left on for the caller (LibTorch 2.x's spelling).
void enable_cpu_amp() {
  at::autocast::set_autocast_dtype(at::kCPU, at::kHalf);
  at::autocast::set_autocast_enabled(at::kCPU, true);
}

// Switches CUDA autocast off and puts back the state it found: its caller's is unchanged.
torch::Tensor evaluate_restoring(torch::Tensor x) {
  const bool was = at::autocast::is_autocast_enabled(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  auto y = x * 2;
  at::autocast::set_autocast_enabled(at::kCUDA, was);
  return y;
}
