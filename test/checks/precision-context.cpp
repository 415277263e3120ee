// How the precision of each piece of code is inferred, seen through
// mpnanny-fp16-constant-range (masked_fill(-1e9) fails in fp16 only).
// RUN: %mpnanny_check --checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-fp16-constant-range' %s -- %check_flags | %FileCheckAll %s
// RUN: %mpnanny_check --checks='-*,mpnanny-fp16-constant-range' --precision=fp16 %s -- %check_flags | FileCheck --check-prefix=FORCED %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// A submodule of a converted model is converted too; its constructor runs in fp16.
// (LayerNorm's eps is added in float by its kernel: 1e-12 is no finding.)
struct BlockImpl : torch::nn::Module {
  BlockImpl()
      : norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({8}).eps(1e-12)))) {
    bias = bias.masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:35: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  }
  torch::nn::LayerNorm norm;
  torch::Tensor bias, mask;
};
TORCH_MODULE(Block);

struct ModelImpl : torch::nn::Module {
  ModelImpl() : block(register_module("block", Block())) {}
  Block block;
};
TORCH_MODULE(Model);

void train(bool cuda) {
  // The dtype is chosen at run time: the code must be safe in fp16.
  const torch::Dtype dtype = cuda ? torch::kHalf : torch::kFloat;
  Model model;
  model->to(torch::kCUDA, dtype);
}

// Testing for a dtype is not converting to it.
torch::Tensor fp32_with_dtype_test(torch::Tensor x, torch::Tensor mask) {
  if (x.scalar_type() == torch::kHalf)
    return x;
  return x.masked_fill(mask, -1e9);
// FORCED: :[[@LINE-1]]:30: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16
}

// A hand-rolled guard: LibTorch has no autocast guard class in C++.
struct AutocastGuard {
  AutocastGuard() { at::autocast::set_enabled(true); }
  ~AutocastGuard() { at::autocast::set_enabled(false); }
};

torch::Tensor guarded(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  torch::Tensor before = torch::matmul(q, k).masked_fill(mask, -1e9);
  {
    AutocastGuard guard;
    auto inside = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:57: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
    before = before + inside;
  }
  return before + torch::matmul(q, k).masked_fill(mask, -1e9);
}

// The 2.4+ device-generic switch; a bf16 autocast dtype holds -1e9.
torch::Tensor generic_switch(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  auto s = torch::matmul(q, k).masked_fill(mask, -1e9);
// CHECK: :[[@LINE-1]]:50: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16{{.*}} [mpnanny-fp16-constant-range]
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  return s;
}

// A kernel with no body in sight follows bf16 inputs to bf16, which holds -1e9, and a factory of
// the project makes tensors of the options it is given; the same kernel on inputs of no known
// format computes in the project's fp16.
torch::Tensor fused_op(const torch::Tensor &a, const torch::Tensor &b);
torch::Tensor make_input(std::vector<int64_t> shape, const torch::TensorOptions &options);
struct MoeTest {
  torch::TensorOptions options_;
  void SetUp() { options_ = torch::TensorOptions().dtype(torch::kBFloat16); }
  torch::Tensor input() { return make_input({2, 2}, options_); }
};
struct MoeTestRun : MoeTest { // what TEST_F(MoeTest, Run) declares
  torch::Tensor body(torch::Tensor mask) {
    auto x = input();
    auto made = x.masked_fill(mask, -1e9);
// FORCED-NOT: precision-context.cpp:[[@LINE-1]]:
    auto from_bf16 = fused_op(x, x).masked_fill(mask, -1e9);
// FORCED-NOT: precision-context.cpp:[[@LINE-1]]:
    return made + from_bf16;
  }
};
torch::Tensor unknown_input(torch::Tensor x, torch::Tensor mask) {
  return fused_op(x, x).masked_fill(mask, -1e9);
// FORCED: precision-context.cpp:[[@LINE-1]]:43: warning: Tensor::masked_fill fill value -1e9 cannot be represented in fp16
}
