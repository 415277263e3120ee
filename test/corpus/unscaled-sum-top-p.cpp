// Nucleus (top-p) sampling: the cumulative probability in fp16 moves in steps of 4.9e-4
// below 1 (3.9e-3 in bf16), so the cut-off keeps the wrong number of tokens.
#include <torch/torch.h>

torch::Tensor top_p_mask(torch::Tensor logits, double top_p) {
  auto probs = torch::softmax(logits, -1, torch::kFloat).to(torch::kHalf);
  auto cumulative = probs.cumsum(-1); // expect: mpnanny-unscaled-sum
  auto cumulative32 = probs.cumsum(-1, torch::kFloat); // ok: mpnanny-unscaled-sum
  auto cumulative_up = probs.to(torch::kFloat).cumsum(-1); // ok: mpnanny-unscaled-sum
  return (cumulative > top_p) + (cumulative32 > top_p) + (cumulative_up > top_p);
}
