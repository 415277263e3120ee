// An eps added to the probabilities before the log, in a half model: 1e-8 is 0 in fp16.
#include <torch/torch.h>

torch::Tensor half_eps_logprobs(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto p = torch::softmax(h, -1, torch::kFloat);
  auto a = torch::log(p + 1e-8); // expect: mpnanny-log-softmax
  auto b = (p + 1e-6).log(); // expect: mpnanny-log-softmax
  auto c = torch::log_softmax(h, -1, torch::kFloat); // ok: mpnanny-log-softmax
  auto d = torch::log(torch::sigmoid(h) + 1e-3); // ok: mpnanny-log-softmax
  auto e = torch::log(p.sum(-1, true) + 1e-3); // ok: mpnanny-log-softmax
  return a + b + c + d + e;
}
