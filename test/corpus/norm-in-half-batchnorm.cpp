// BatchNorm running statistics in fp16 (NVIDIA/apex PR #144, keep_batchnorm_fp32): momentum
// updates below half a step are lost and the evaluation statistics freeze.
#include <torch/torch.h>

struct ConvBlockImpl : torch::nn::Module {
  torch::nn::BatchNorm2d bn1{64}; // expect: mpnanny-norm-in-half
  torch::nn::BatchNorm1d head_bn{nullptr}; // expect: mpnanny-norm-in-half
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({64})}; // ok: mpnanny-norm-in-half
  torch::Tensor forward(torch::Tensor x) {
    return ln(head_bn(bn1(x))); // ok: mpnanny-norm-in-half
  }
};
TORCH_MODULE(ConvBlock);

struct Fp32BlockImpl : torch::nn::Module {
  torch::nn::BatchNorm2d bn{64}; // ok: mpnanny-norm-in-half
  torch::Tensor forward(torch::Tensor x) { return bn(x); }
};
TORCH_MODULE(Fp32Block);

void build() {
  ConvBlock half_block;
  half_block->to(torch::kCUDA, torch::kHalf);
  Fp32Block fp32_block;
  fp32_block->to(torch::kCUDA);
  torch::nn::BatchNorm2d bn_alone(32);
  bn_alone->to(torch::kHalf); // expect: mpnanny-norm-in-half
  torch::nn::BatchNorm2d bn_fp32(32);
  bn_fp32->to(torch::kFloat); // ok: mpnanny-norm-in-half
}
