// A LayerNorm written by hand in fp16 (centered squares, Tensor::var) next to the built-in
// module, whose kernel computes its statistics in fp32 and is safe.
#include <torch/torch.h>

struct ManualLNImpl : torch::nn::Module {
  torch::nn::LayerNorm builtin{torch::nn::LayerNormOptions({512})};
  torch::Tensor forward(torch::Tensor x) {
    auto mu = x.mean(-1, true); // ok: mpnanny-norm-in-half
    auto centered = x - mu;
    auto var = (centered * centered).mean(-1, true); // expect: mpnanny-norm-in-half
    auto var2 = x.var(-1, false, true); // expect: mpnanny-norm-in-half
    auto out = builtin(x); // ok: mpnanny-norm-in-half
    auto xf = x.to(torch::kFloat);
    auto cf = xf - xf.mean(-1, true);
    auto var32 = (cf * cf).mean(-1, true); // ok: mpnanny-norm-in-half
    return var + var2 + out + var32;
  }
};
TORCH_MODULE(ManualLN);

void build() {
  ManualLN ln;
  ln->to(torch::kHalf);
}
