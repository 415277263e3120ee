// Attention probabilities indexed or joined before a log (copy attention, alignment scores).
#include <torch/torch.h>

using torch::indexing::Slice;

torch::Tensor half_alignment(torch::Tensor scores, torch::Tensor target) {
  auto attn = torch::softmax(scores.to(torch::kHalf), -1);
  auto last = torch::log(attn.index({Slice(), -1})); // expect: mpnanny-log-softmax
  auto gold = attn.gather(-1, target).log(); // expect: mpnanny-log-softmax
  auto first = attn.select(1, 0).log(); // expect: mpnanny-log-softmax
  auto joined = torch::log(torch::cat({attn, attn.flip({0})}, 0)); // expect: mpnanny-log-softmax
  auto stable = torch::log_softmax(scores.to(torch::kHalf), -1).index({Slice(), -1}); // ok: mpnanny-log-softmax
  auto other = torch::log(torch::cat({scores.abs() + 1, scores.abs() + 2}, 0)); // ok: mpnanny-log-softmax
  return last + gold + first + joined + stable + other;
}
