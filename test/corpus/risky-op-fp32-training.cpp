// A plain fp32 training step: nothing may be reported, whatever ops it uses.
#include <torch/torch.h>

torch::Tensor fp32_step(torch::Tensor logits, torch::Tensor target) {
  auto e = torch::exp(logits); // ok: mpnanny-risky-op
  auto p = logits.pow(2); // ok: mpnanny-risky-op
  auto lse = torch::logsumexp(logits, {-1}); // ok: mpnanny-risky-op
  auto t = logits.exp(); // ok: mpnanny-risky-op
  return e.mean() + p.mean() + lse.mean() + t.mean();
}
