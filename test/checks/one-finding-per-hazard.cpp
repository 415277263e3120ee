// RUN: %mpnanny_check --checks='-*,mpnanny-unsafe-math,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s --check-prefix=BOTH
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-unsafe-math,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s --check-prefix=BOTH
// RUN: %mpnanny_check --checks='-*,mpnanny-unsafe-math' %s -- %check_flags | %FileCheckAll %s --check-prefix=ALONE

// A guard that fp16 stores as 0 lets a zero through to a division or a log. The guard is
// mpnanny-fp16-constant-range's finding; mpnanny-unsafe-math reports the division only when
// that check is off, so one hazard gives one finding.

#include <torch/torch.h>

torch::Tensor renorm(torch::Tensor x, torch::Tensor y) {
  auto h = x.to(torch::kHalf);
  auto norm = torch::norm(h, 2, {-1}, true);
  auto scaled = h / (norm + 1e-8);
// BOTH: :[[@LINE-1]]:{{[0-9]+}}: warning: adding 1e-8 to a fp16 tensor is no protection{{.*}} [mpnanny-fp16-constant-range]
// ALONE: :[[@LINE-2]]:{{[0-9]+}}: warning: division by a value that may be 0 in fp16{{.*}}1e-8 is 0 in fp16{{.*}} [mpnanny-unsafe-math]
  auto normalized = h / norm.clamp_min(1e-20);
// BOTH: :[[@LINE-1]]:{{[0-9]+}}: warning: {{.*}}1e-20{{.*}} [mpnanny-fp16-constant-range]
// ALONE: :[[@LINE-2]]:{{[0-9]+}}: warning: division by a value that may be 0 in fp16{{.*}}the clamp bound 1e-20 is 0 in fp16{{.*}} [mpnanny-unsafe-math]
  // A zero that no guard was meant to stop is unsafe-math's with both checks on.
  auto plain = h / norm;
// BOTH: :[[@LINE-1]]:{{[0-9]+}}: warning: division by a value that may be 0 in fp16{{.*}} [mpnanny-unsafe-math]
// ALONE: :[[@LINE-2]]:{{[0-9]+}}: warning: division by a value that may be 0 in fp16{{.*}} [mpnanny-unsafe-math]
  return scaled + normalized + plain;
}
