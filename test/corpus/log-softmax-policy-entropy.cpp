// Policy-gradient entropy and log-probabilities from one softmax (A2C/PPO style).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor policy_terms(torch::Tensor logits, torch::Tensor actions) {
  at::autocast::set_enabled(true);
  auto probs = torch::softmax(logits, -1);
  auto log_probs = probs.log(); // expect: mpnanny-log-softmax
  auto entropy = -(probs * torch::log(probs)); // expect: mpnanny-log-softmax
  auto stable_log_probs = torch::log_softmax(logits, -1); // ok: mpnanny-log-softmax
  auto stable_entropy = -(probs * stable_log_probs); // ok: mpnanny-log-softmax
  auto chosen = stable_log_probs * actions; // ok: mpnanny-log-softmax
  at::autocast::set_enabled(false);
  return log_probs + entropy + stable_entropy + chosen;
}
