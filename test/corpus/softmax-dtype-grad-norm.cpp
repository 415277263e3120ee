// Gradient and weight norms of an fp16 model: the L2 norm of a large tensor passes 65504
// (inf), and clipping by it zeroes every update. Autocast redispatches norm with fp32.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

double total_grad_norm(torch::nn::Linear model) {
  model->to(torch::kHalf);
  double total = 0;
  for (auto &p : model->parameters()) {
    auto g = p.grad();
    auto n = g.norm(); // expect: mpnanny-softmax-dtype
    auto n32 = g.to(torch::kFloat).norm(); // ok: mpnanny-softmax-dtype
    total += n.item<double>() + n32.item<double>();
  }
  return total;
}

torch::Tensor autocast_feature_norm(torch::Tensor a, torch::Tensor b) {
  at::autocast::set_enabled(true);
  auto h = torch::matmul(a, b);
  auto n = h.norm(); // ok: mpnanny-softmax-dtype
  at::autocast::set_enabled(false);
  return n;
}

torch::Tensor bf16_norm(torch::Tensor w) {
  return w.to(torch::kBFloat16).norm(); // ok: mpnanny-softmax-dtype
}
