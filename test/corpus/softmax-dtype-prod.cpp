// Products of probabilities (sequence likelihoods, survival products) in fp16: 16 factors
// of 2 give 65536 = inf, and a product of small probabilities falls below 2.98e-8 to 0.
#include <torch/torch.h>

torch::Tensor sequence_likelihood(torch::Tensor token_probs) {
  auto p = token_probs.to(torch::kHalf);
  auto joint = p.prod(); // expect: mpnanny-softmax-dtype
  auto per_row = p.prod(1); // expect: mpnanny-softmax-dtype
  auto survival = p.cumprod(1); // expect: mpnanny-softmax-dtype
  auto joint32 = p.prod(torch::kFloat); // ok: mpnanny-softmax-dtype
  auto per_row32 = p.prod(1, false, torch::kFloat); // ok: mpnanny-softmax-dtype
  auto survival32 = p.to(torch::kFloat).cumprod(1); // ok: mpnanny-softmax-dtype
  auto all_valid = (p > 0).prod(); // ok: mpnanny-softmax-dtype
  return joint + per_row + survival + joint32 + per_row32 + survival32 + all_valid;
}
