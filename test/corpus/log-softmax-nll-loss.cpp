// nll_loss on log(softmax): the hand-rolled cross-entropy (torch/nn#804).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

namespace F = torch::nn::functional;

torch::Tensor autocast_loss(torch::Tensor logits, torch::Tensor target) {
  at::autocast::set_enabled(true);
  auto bad = torch::nll_loss(torch::log(torch::softmax(logits, 1)), target); // expect: mpnanny-log-softmax
  auto good = torch::nll_loss(torch::log_softmax(logits, 1), target); // ok: mpnanny-log-softmax
  auto best = F::cross_entropy(logits, target); // ok: mpnanny-log-softmax
  auto lp = torch::log(logits.softmax(1)); // expect: mpnanny-log-softmax
  auto via_local = torch::nll_loss(lp, target); // ok: mpnanny-log-softmax
  at::autocast::set_enabled(false);
  return bad + good + best + via_local;
}
