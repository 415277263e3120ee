// A hand-rolled gradient-norm over fp16 gradients: the squared sum over all elements is
// stored in fp16 and is inf long before the gradients are large.
#include <torch/torch.h>

double grad_sq_sum(std::vector<torch::Tensor> grads) {
  double total = 0;
  for (auto &g : grads) {
    auto h = g.to(torch::kHalf);
    auto sq = (h * h).sum(); // expect: mpnanny-unscaled-sum
    auto sq32 = (h * h).sum(torch::kFloat); // ok: mpnanny-unscaled-sum
    auto hf = h.to(torch::kFloat);
    auto sq_up = (hf * hf).sum(); // ok: mpnanny-unscaled-sum
    total += sq.item<double>() + sq32.item<double>() + sq_up.item<double>();
  }
  return total;
}

double bf16_total(torch::Tensor w) {
  return w.to(torch::kBFloat16).sum().item<double>(); // ok: mpnanny-unscaled-sum
}
