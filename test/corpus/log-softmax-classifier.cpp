// Classifier heads under autocast: log-probabilities taken as log(softmax).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor autocast_logprobs(torch::Tensor logits) {
  at::autocast::set_enabled(true);
  auto logp = torch::log(torch::softmax(logits, -1)); // expect: mpnanny-log-softmax
  auto logp_m = logits.softmax(-1).log(); // expect: mpnanny-log-softmax
  auto stable = torch::log_softmax(logits, -1); // ok: mpnanny-log-softmax
  auto stable_m = logits.log_softmax(-1); // ok: mpnanny-log-softmax
  auto gate = torch::log(torch::sigmoid(logits)); // ok: mpnanny-log-softmax
  auto probs = torch::softmax(logits, -1); // ok: mpnanny-log-softmax
  at::autocast::set_enabled(false);
  return logp + logp_m + stable + stable_m + gate + probs;
}
