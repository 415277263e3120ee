// Counting tokens and summing a batch loss in fp16: a count past 2048 loses units, a total
// past 65504 is inf (numpy#24443: a float16 sum stuck at 2048).
#include <torch/torch.h>

torch::Tensor mean_token_loss(torch::Tensor per_token_loss, torch::Tensor labels) {
  auto l = per_token_loss.to(torch::kHalf);
  auto valid = (labels != -100);
  auto n_tokens = valid.sum(); // ok: mpnanny-unscaled-sum
  auto n_long = valid.to(torch::kLong).sum(); // ok: mpnanny-unscaled-sum
  auto weights = valid.to(torch::kHalf);
  auto n_half = weights.sum(); // expect: mpnanny-unscaled-sum
  auto total = (l * weights).sum(); // expect: mpnanny-unscaled-sum
  auto total32 = (l * weights).sum(torch::kFloat); // ok: mpnanny-unscaled-sum
  return (total + total32) / (n_tokens + n_long + n_half);
}
