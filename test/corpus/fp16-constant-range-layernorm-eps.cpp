// BERT-style LayerNorm eps 1e-12 is 0 in fp16 (pytorch#41527, wenet PR #907): a row of
// equal values has variance 0 and rsqrt(0 + 0) = inf. 1e-5 (the default) survives.
#include <torch/torch.h>

struct BertLayerImpl : torch::nn::Module {
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({768}).eps(1e-12)}; // expect: mpnanny-fp16-constant-range
  torch::nn::LayerNorm ok_ln{torch::nn::LayerNormOptions({768}).eps(1e-5)}; // ok: mpnanny-fp16-constant-range
  torch::Tensor forward(torch::Tensor x) { return ok_ln(ln(x)); }
};
TORCH_MODULE(BertLayer);

struct Fp32LayerImpl : torch::nn::Module {
  torch::nn::LayerNorm ln{torch::nn::LayerNormOptions({768}).eps(1e-12)}; // ok: mpnanny-fp16-constant-range
  torch::Tensor forward(torch::Tensor x) { return ln(x); }
};
TORCH_MODULE(Fp32Layer);

void build() {
  BertLayer half_layer;
  half_layer->to(torch::kHalf);
  Fp32Layer fp32_layer;
}
