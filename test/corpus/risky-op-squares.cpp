// Squares and distances in a model converted to fp16: x*x passes 65504 once |x| > 255.9.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct EnergyHeadImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor h, torch::Tensor centers) {
    auto energy = torch::pow(h, 2); // expect: mpnanny-risky-op
    auto sq = h.square(); // expect: mpnanny-risky-op
    auto dist = torch::cdist(h, centers); // expect: mpnanny-risky-op
    auto spread = h.cosh(); // expect: mpnanny-risky-op
    auto safe = h.to(torch::kFloat).pow(2); // ok: mpnanny-risky-op
    auto safe_sq = torch::square(h.to(torch::kFloat32)); // ok: mpnanny-risky-op
    auto scaled = torch::matmul(h, centers); // ok: mpnanny-risky-op
    auto act = torch::relu(h); // ok: mpnanny-risky-op
    return energy + sq + dist + spread + safe + safe_sq + scaled + act;
  }
};
TORCH_MODULE(EnergyHead);

void build_half() {
  EnergyHead head;
  head->to(torch::kHalf);
}

// bf16 holds x*x up to 1.8e19: nothing to report.
torch::Tensor bf16_energy(torch::Tensor x) {
  auto b = x.to(torch::kBFloat16);
  return b.pow(2) + b.square(); // ok: mpnanny-risky-op
}

// Under autocast pow runs in fp32.
torch::Tensor autocast_energy(torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto e = torch::pow(x, 2); // ok: mpnanny-risky-op
  at::autocast::set_enabled(false);
  return e;
}
