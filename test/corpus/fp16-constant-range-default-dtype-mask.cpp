// A half model whose causal mask is built with factories that take no dtype: LibTorch
// makes them fp32 (its default dtype), so -1e9 fits. A mask made with the scores'
// options, or in half, does not.
#include <torch/torch.h>

struct CausalHeadImpl : torch::nn::Module {
  torch::nn::Linear q{64, 64};
  torch::Tensor forward(torch::Tensor x, torch::Tensor keep, int64_t T) {
    auto s = torch::matmul(q(x), x.transpose(-2, -1));
    auto bias = torch::full({T, T}, -1e9); // ok: mpnanny-fp16-constant-range
    auto bias2 = torch::zeros({T, T}).masked_fill(keep, -1e9); // ok: mpnanny-fp16-constant-range
    auto bias3 = torch::full({T, T}, -1e9, s.options()); // expect: mpnanny-fp16-constant-range
    auto bias4 = torch::empty({T, T}, torch::kHalf).fill_(-1e9); // expect: mpnanny-fp16-constant-range
    auto masked = s.masked_fill(keep, -1e9); // expect: mpnanny-fp16-constant-range
    return torch::softmax(s.to(torch::kFloat) + bias + bias2, -1, torch::kFloat) + bias3 + bias4 + masked;
  }
};
TORCH_MODULE(CausalHead);

void build() {
  CausalHead head;
  head->to(torch::kHalf);
}
