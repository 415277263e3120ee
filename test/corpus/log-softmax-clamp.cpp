// Clamping attention probabilities before a log (pointer networks, copy attention).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor copy_logprobs(torch::Tensor scores) {
  at::autocast::set_enabled(true);
  auto attn = torch::softmax(scores, -1);
  auto a = torch::log(attn.clamp_min(1e-6)); // expect: mpnanny-log-softmax
  auto b = torch::log(torch::clamp(attn, 1e-6, 1.0)); // expect: mpnanny-log-softmax
  auto c = attn.clamp(1e-7, 1.0).log(); // expect: mpnanny-log-softmax
  auto d = torch::log_softmax(scores, -1); // ok: mpnanny-log-softmax
  auto e = torch::log(scores.clamp_min(1e-6)); // ok: mpnanny-log-softmax
  auto f = torch::log(torch::sigmoid(scores).clamp_min(1e-6)); // ok: mpnanny-log-softmax
  at::autocast::set_enabled(false);
  return a + b + c + d + e + f;
}
