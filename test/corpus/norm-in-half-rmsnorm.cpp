// T5 / Llama RMSNorm by hand in a model converted to fp16: x.pow(2) overflows 65504 once
// |x| > 255.9 (T5 hidden states reached 66246: transformers#5651). HF upcasts first.
#include <torch/torch.h>

struct RMSNormImpl : torch::nn::Module {
  torch::Tensor weight;
  double eps = 1e-6;
  torch::Tensor forward(torch::Tensor hidden) {
    auto variance = hidden.pow(2).mean(-1, true); // expect: mpnanny-norm-in-half
    auto normed = hidden * torch::rsqrt(variance + eps);
    auto hf = hidden.to(torch::kFloat);
    auto variance32 = hf.pow(2).mean(-1, true); // ok: mpnanny-norm-in-half
    auto normed32 = (hf * torch::rsqrt(variance32 + eps)).to(hidden.scalar_type());
    return weight * normed + weight * normed32;
  }
};
TORCH_MODULE(RMSNorm);

struct T5LayerNormImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor h) {
    auto var_sq = h.square().mean(-1, true); // expect: mpnanny-norm-in-half
    auto var_up = h.to(torch::kFloat).square().mean(-1, true); // ok: mpnanny-norm-in-half
    return var_sq + var_up;
  }
};
TORCH_MODULE(T5LayerNorm);

void build() {
  RMSNorm norm;
  norm->to(torch::kHalf);
  T5LayerNorm t5;
  t5->to(torch::kHalf);
}
