// LibTorch 2.x's autocast API (issue 26): device-typed switches, saved and restored states, and
// CPU autocast, whose op list is shorter than CUDA's. Seen through four checks: a -1e9 fill in
// fp16 (fp16-constant-range), softmax and norms in fp16 (softmax-dtype), pow in fp16 (risky-op),
// exp in fp16 (unsafe-math).
// RUN: %mpnanny_check --checks='-*,mpnanny-fp16-constant-range,mpnanny-softmax-dtype,mpnanny-risky-op,mpnanny-unsafe-math' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-fp16-constant-range,mpnanny-softmax-dtype,mpnanny-risky-op,mpnanny-unsafe-math' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// CUDA autocast, 2.4+ spelling: the matmul runs in fp16, and so does the fill of its result;
// exp, softmax, pow and linalg_vector_norm are computed in fp32 there, even of fp16 tensors.
// (An exp is judged when its argument is known unbounded, a softmax when its probabilities
// reach a hazardous use: here a ReLU of the scores, and a cumsum.)
torch::Tensor cuda_autocast(torch::Tensor q, torch::Tensor k, torch::Tensor mask, torch::Tensor x) {
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  auto s = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:50: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  auto h = x.to(torch::kHalf);
  auto p = torch::exp(torch::relu(s)) + torch::softmax(h, -1).cumsum(-1) + torch::pow(h, 2) +
           torch::linalg_vector_norm(h);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  return p;
}

// 1.x's spelling is still there in 2.x (deprecated): set_enabled is CUDA's switch.
torch::Tensor deprecated_spelling(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  at::autocast::set_enabled(true);
  auto s = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:50: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_enabled(false);
  return s;
}

// The state read with is_autocast_enabled(device) and written back: after the restore the code
// runs as the function began, in fp32 here.
torch::Tensor saved_and_restored(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  const bool was = at::autocast::is_autocast_enabled(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  auto inside = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:55: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_autocast_enabled(at::kCUDA, was);
  return inside + torch::matmul(q, k).masked_fill(mask, -1e9);
}

// A helper that switches autocast off and restores it leaves its caller's state alone: the
// caller's code after the call is still fp32 (it read as "autocast is enabled here").
torch::Tensor evaluate_in_fp32(torch::Tensor x) {
  bool was = at::autocast::is_autocast_enabled(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  auto y = x * 2;
  at::autocast::set_autocast_enabled(at::kCUDA, was);
  return y;
}
torch::Tensor after_the_helper(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  auto e = evaluate_in_fp32(q);
  return e + torch::matmul(q, k).masked_fill(mask, -1e9);
}

// CPU autocast to fp16 (2.x): the same code, but the CPU's list is short. The matmul runs in
// fp16, and nothing is upcast: exp of its ReLU, softmax, pow and the vector norm of fp16
// tensors all compute in fp16.
torch::Tensor cpu_autocast(torch::Tensor q, torch::Tensor k, torch::Tensor x) {
  at::autocast::set_autocast_dtype(at::kCPU, at::kHalf);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  auto s = torch::matmul(q, k);
  auto h = x.to(torch::kHalf);
  auto e = torch::exp(torch::relu(s));
// CHECK: :[[@LINE-1]]:12: warning: torch::exp in fp16 overflows to inf once its argument passes 11.09{{.*}} [mpnanny-unsafe-math]
  auto p = torch::softmax(h, -1);
// CHECK: :[[@LINE-1]]:12: warning: torch::softmax in fp16{{.*}}; here they reach a cumsum (line [[@LINE+1]]) [mpnanny-softmax-dtype]
  auto top = p.cumsum(-1);
  auto w = torch::pow(h, 2);
// CHECK: :[[@LINE-1]]:12: warning: torch::pow in fp16{{.*}} [mpnanny-risky-op]
  auto n = torch::linalg_vector_norm(h);
// CHECK: :[[@LINE-1]]:12: warning: torch::linalg_vector_norm in fp16{{.*}} [mpnanny-softmax-dtype]
  at::autocast::set_autocast_enabled(at::kCPU, false);
  return e + top + w + n;
}
