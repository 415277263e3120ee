// A Bernoulli policy head in a half model (PPO-style log-probabilities of actions).
#include <torch/torch.h>

torch::Tensor bernoulli_logp(torch::Tensor logits, torch::Tensor actions) {
  auto h = logits.to(torch::kHalf);
  auto p = torch::sigmoid(h);
  auto logp1 = torch::log(p + 1e-8); // expect: mpnanny-fp16-constant-range
  auto logp0 = torch::log(1 - p); // expect: mpnanny-unsafe-math
  auto safe1 = torch::log(p + 1e-3); // ok: mpnanny-unsafe-math
  auto safe0 = torch::log(1.001 - p); // ok: mpnanny-unsafe-math
  auto floor1 = p.clamp_min(1e-4).log(); // ok: mpnanny-unsafe-math
  auto raw = torch::log(h); // ok: mpnanny-unsafe-math
  return actions * logp1 + (1 - actions) * logp0 + safe1 + safe0 + floor1 + raw;
}
