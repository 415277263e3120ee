// LibTorch 1.13's autocast API (issue 26), with the mock headers cut down to what 1.13 declares:
// set_enabled / set_cpu_enabled, set_autocast_gpu_dtype / set_autocast_cpu_dtype, is_enabled.
// 1.13's CUDA autocast list lacks linalg_vector_norm (2.x computes it in fp32).
// RUN: %mpnanny_check --checks='-*,mpnanny-fp16-constant-range,mpnanny-softmax-dtype,mpnanny-risky-op' %s -- %check_flags -DMOCK_LIBTORCH_1_13 | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-fp16-constant-range,mpnanny-softmax-dtype,mpnanny-risky-op' %s -- %check_flags -DMOCK_LIBTORCH_1_13 | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// CUDA autocast: the matmul and the fill of its result in fp16; softmax and pow in fp32; the
// vector norm, not on 1.13's list, in its input's type.
torch::Tensor cuda_autocast(torch::Tensor q, torch::Tensor k, torch::Tensor mask, torch::Tensor x) {
  at::autocast::set_autocast_gpu_dtype(at::kHalf);
  at::autocast::set_enabled(true);
  auto s = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:50: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  auto h = x.to(torch::kHalf);
  auto p = torch::softmax(h, -1).cumsum(-1) + torch::pow(h, 2);
  auto n = torch::linalg_vector_norm(h);
// CHECK: :[[@LINE-1]]:12: warning: torch::linalg_vector_norm in fp16{{.*}} [mpnanny-softmax-dtype]
  at::autocast::set_enabled(false);
  return p + n;
}

// Saved with is_enabled() and restored: fp32 again after the restore.
torch::Tensor saved_and_restored(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  const bool was = at::autocast::is_enabled();
  at::autocast::set_enabled(true);
  auto inside = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:55: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_enabled(was);
  return inside + torch::matmul(q, k).masked_fill(mask, -1e9);
}

// CPU autocast in 1.13 is bf16: -1e9 fits, and nothing here is an fp16 finding.
torch::Tensor cpu_autocast(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  at::autocast::set_cpu_enabled(true);
  auto s = torch::matmul(q, k).masked_fill(mask, -1e9);
  auto p = torch::softmax(s, -1).cumsum(-1) + torch::pow(s, 2);
  at::autocast::set_cpu_enabled(false);
  return p;
}
