// The same formulas in fp32 code and under autocast: exp and log run in fp32 there.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor fp32_math(torch::Tensor x) {
  auto p = torch::sigmoid(x);
  auto a = torch::log(p + 1e-8); // ok: mpnanny-unsafe-math
  auto b = x.clamp(-20, 20).exp(); // ok: mpnanny-unsafe-math
  auto c = x / x.abs(); // ok: mpnanny-unsafe-math
  auto d = torch::sqrt(torch::relu(x)); // ok: mpnanny-unsafe-math
  return a + b + c + d;
}

torch::Tensor autocast_math(torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto a = x.clamp(-20, 20).exp(); // ok: mpnanny-unsafe-math
  auto p = torch::softmax(x, -1);
  auto b = p / p.sum(-1, true); // ok: mpnanny-unsafe-math
  auto gate = torch::sigmoid(x.to(torch::kHalf));
  auto c = torch::log(1 - gate); // expect: mpnanny-unsafe-math
  auto d = torch::log(gate + 1e-3); // ok: mpnanny-unsafe-math
  at::autocast::set_enabled(false);
  return a + b + c + d;
}
