// The same log(softmax) in fp32 code (not a mixed-precision finding), in bf16 and in fp16.
#include <torch/torch.h>

torch::Tensor fp32_logprobs(torch::Tensor x) {
  auto a = torch::log(torch::softmax(x, -1)); // ok: mpnanny-log-softmax
  auto b = x.softmax(1).log(); // ok: mpnanny-log-softmax
  return a + b;
}

torch::Tensor bf16_logprobs(torch::Tensor x) {
  auto b = x.to(torch::kBFloat16);
  auto a = torch::log(torch::softmax(b, -1, torch::kFloat)); // expect: mpnanny-log-softmax
  auto c = torch::log_softmax(b, -1, torch::kFloat); // ok: mpnanny-log-softmax
  return a + c;
}

torch::Tensor fp16_logprobs(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto p = torch::softmax(h.to(torch::kFloat), -1);
  auto a = p.log(); // expect: mpnanny-log-softmax
  auto c = h.to(torch::kFloat).log_softmax(-1); // ok: mpnanny-log-softmax
  return a + c;
}
