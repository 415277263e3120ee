// Gate probabilities that reach a log through indexing, views and joins: each keeps the
// [0, 1] of the sigmoid, so fp16's 0 for a tiny probability is still there.
#include <torch/torch.h>
#include <vector>

using torch::indexing::Slice;

torch::Tensor half_gate_views(torch::Tensor logits, torch::Tensor idx) {
  auto p = torch::sigmoid(logits.to(torch::kHalf));
  auto first = torch::log(p.index({Slice(), 0})); // expect: mpnanny-unsafe-math
  auto row = p[0].log(); // expect: mpnanny-unsafe-math
  auto diag = torch::log(p.diagonal()); // expect: mpnanny-unsafe-math
  auto picked = torch::log(p.gather(1, idx)); // expect: mpnanny-unsafe-math
  auto both = torch::log(torch::cat({p, 1 - p}, 1)); // expect: mpnanny-unsafe-math
  auto half = torch::log(p.chunk(2, -1)[1]); // expect: mpnanny-unsafe-math
  std::vector<torch::Tensor> parts{p.t(), p.narrow(1, 0, 2)};
  auto stacked = torch::log(torch::stack(parts)); // expect: mpnanny-unsafe-math
  auto guarded = torch::log(p.index({Slice(), 0}) + 1e-3); // ok: mpnanny-unsafe-math
  auto floored = torch::log(torch::cat({p.clamp_min(1e-3), p.clamp(1e-2, 1)}, 1)); // ok: mpnanny-unsafe-math
  auto unknown = torch::log(torch::cat({p, logits.to(torch::kHalf)}, 1)); // ok: mpnanny-unsafe-math
  return first + row + diag + picked + both + half + stacked + guarded + floored + unknown;
}

// The same views of fp32 probabilities: fp32 keeps them above 0.
torch::Tensor fp32_gate_views(torch::Tensor logits) {
  auto p = torch::sigmoid(logits);
  return torch::log(p.index({Slice(), 0})) + torch::log(torch::cat({p, 1 - p}, 1)); // ok: mpnanny-unsafe-math
}
