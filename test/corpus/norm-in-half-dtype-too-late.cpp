// A dtype on mean() does not save a square already computed in fp16: x.pow(2) is inf
// before the fp32 mean sees it. Upcast x first.
#include <torch/torch.h>

struct QKNormImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor q) {
    auto late = q.pow(2).mean(-1, true, torch::kFloat); // expect: mpnanny-norm-in-half
    auto late_fn = torch::mean(q * q, -1, true, torch::kFloat); // expect: mpnanny-norm-in-half
    auto early = q.to(torch::kFloat).pow(2).mean(-1, true); // ok: mpnanny-norm-in-half
    auto qf = q.to(torch::kFloat);
    auto early_fn = torch::mean(qf * qf, -1, true); // ok: mpnanny-norm-in-half
    return late + late_fn + early + early_fn;
  }
};
TORCH_MODULE(QKNorm);

void build() {
  QKNorm qk;
  qk->to(torch::kHalf);
}
