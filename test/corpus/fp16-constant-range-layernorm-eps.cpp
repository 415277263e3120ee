// BERT-style eps 1e-12 in a model converted to fp16. LayerNorm's kernels take eps as a
// double and add it to the variance in float (acc_type) for half input, so the module and
// torch::layer_norm are safe with 1e-12. A hand-written norm adds it in fp16, where 1e-12
// is 0 (pytorch#41527, wenet PR #907): a row of equal values gives rsqrt(0 + 0) = inf.
#include <torch/torch.h>

struct BertLayerImpl : torch::nn::Module {
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({768}).eps(1e-12)}; // ok: mpnanny-fp16-constant-range
  torch::nn::LayerNorm ok_ln{torch::nn::LayerNormOptions({768}).eps(1e-5)}; // ok: mpnanny-fp16-constant-range
  torch::Tensor forward(torch::Tensor x) {
    auto fused = torch::layer_norm(ok_ln(ln(x)), {768}, {}, {}, 1e-12); // ok: mpnanny-fp16-constant-range
    auto by_hand = x / (x.pow(2).mean(-1, true) + 1e-12).sqrt(); // expect: mpnanny-fp16-constant-range, mpnanny-norm-in-half, mpnanny-unsafe-math
    // 1e-5 survives in fp16; the mean of squares in half is still norm-in-half's finding.
    auto guarded = x / (x.pow(2).mean(-1, true) + 1e-5).sqrt(); // ok: mpnanny-fp16-constant-range // expect: mpnanny-norm-in-half
    return fused + by_hand + guarded;
  }
};
TORCH_MODULE(BertLayer);

struct Fp32LayerImpl : torch::nn::Module {
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({768}).eps(1e-12)}; // ok: mpnanny-fp16-constant-range
  torch::Tensor forward(torch::Tensor x) { return ln(x) / (x.pow(2).mean(-1, true) + 1e-12).sqrt(); } // ok: mpnanny-fp16-constant-range
};
TORCH_MODULE(Fp32Layer);

void build() {
  BertLayer half_layer;
  half_layer->to(torch::kHalf);
  Fp32Layer fp32_layer;
}
