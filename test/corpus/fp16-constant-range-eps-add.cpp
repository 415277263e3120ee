// A hand-rolled guard `scale + 1e-8` in a half model: 1e-8 is 0 in fp16, so where the
// scale is 0 the sum is still 0 and a later division or log gives inf (KNOWLEDGE.md).
#include <torch/torch.h>

struct AbsScaleImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto scale = x.abs().mean();
    auto bad = scale + 1e-8; // expect: mpnanny-fp16-constant-range
    auto good = scale + 1e-3; // ok: mpnanny-fp16-constant-range
    auto bad2 = scale + 1e-12; // expect: mpnanny-fp16-constant-range
    auto up = scale.to(torch::kFloat) + 1e-8; // ok: mpnanny-fp16-constant-range
    return bad * good * bad2 * up;
  }
};
TORCH_MODULE(AbsScale);

void convert() {
  AbsScale m;
  m->to(torch::kHalf);
}

torch::Tensor fp32_guard(torch::Tensor x) {
  return x.abs().mean() + 1e-8; // ok: mpnanny-fp16-constant-range
}
