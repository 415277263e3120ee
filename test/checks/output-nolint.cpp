// NOLINT(mpnanny-...) and NOLINTNEXTLINE(mpnanny-...) silence a finding in both doors,
// through clang-tidy's own machinery; a NOLINT for another check silences nothing.
// RUN: not %mpnanny_check --checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s
// Every finding silenced: exit 0, and nothing in JSON either.
// RUN: %mpnanny_check --format=json --checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags -DONLY_SILENCED | FileCheck %s --check-prefix=EMPTY
// EMPTY: []

#include <torch/torch.h>

torch::Tensor silenced(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  auto a = h.masked_fill(mask, -1e9); // NOLINT(mpnanny-fp16-constant-range)
  auto b = h.masked_fill(mask, -1e9); // NOLINT(mpnanny-*)
  auto c = h.masked_fill(mask, -1e9); // NOLINT
  // NOLINTNEXTLINE(mpnanny-fp16-constant-range)
  auto d = h.masked_fill(mask, -1e9);
  // NOLINTBEGIN(mpnanny-fp16-constant-range)
  auto e = h.masked_fill(mask, -1e9);
  // NOLINTEND(mpnanny-fp16-constant-range)
  return a + b + c + d + e;
}

#ifndef ONLY_SILENCED
torch::Tensor not_silenced(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  auto a = h.masked_fill(mask, -1e9); // NOLINT(mpnanny-risky-op)
// CHECK: :[[@LINE-1]]:32: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  // NOLINTNEXTLINE(bugprone-*)
  auto b = h.masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:32: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  return a + b;
}
#endif
