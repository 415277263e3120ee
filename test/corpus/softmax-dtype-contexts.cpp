// The same top-p cumsum of a softmax in four contexts: only fp16 probabilities are flagged
// (summing them in fp32 cannot bring back the tail fp16 already rounded to 0).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor fp32_scores(torch::Tensor x) {
  return torch::softmax(x, -1).to(torch::kFloat).cumsum(-1) + x.log_softmax(-1); // ok: mpnanny-softmax-dtype
}

torch::Tensor bf16_scores(torch::Tensor x) {
  auto h = x.to(torch::kBFloat16);
  return torch::softmax(h, -1).to(torch::kFloat).cumsum(-1); // ok: mpnanny-softmax-dtype
}

torch::Tensor fp16_scores(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  auto bad = torch::softmax(h, -1); // expect: mpnanny-softmax-dtype
  auto good = torch::softmax(h, -1, torch::kFloat); // ok: mpnanny-softmax-dtype
  return bad.to(torch::kFloat).cumsum(-1) + good.cumsum(-1);
}

torch::Tensor autocast_scores(torch::Tensor a, torch::Tensor b) {
  at::autocast::set_enabled(true);
  auto s = torch::matmul(a, b);
  auto safe = s.softmax(-1); // ok: mpnanny-softmax-dtype
  auto forced = s.softmax(-1, torch::kHalf); // expect: mpnanny-softmax-dtype
  at::autocast::set_enabled(false);
  return safe.cumsum(-1) + forced.to(torch::kFloat).cumsum(-1);
}
