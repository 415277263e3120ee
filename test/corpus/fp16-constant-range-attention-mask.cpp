// Attention masks filled with -1e9 / -1e10 in fp16 (NVIDIA/apex#1052, fairseq#3575,
// transformers PR #17306): fp16's largest finite value is 65504, so the fill is -inf or
// an error. The fixes: fill with -1e4 or the format's lowest, upcast the scores, or bf16.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor half_attention(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  auto scores = torch::matmul(q, k).to(torch::kHalf);
  auto a = scores.masked_fill(mask, -1e9); // expect: mpnanny-fp16-constant-range
  auto b = torch::masked_fill(scores, mask, -1e10); // expect: mpnanny-fp16-constant-range
  auto c = scores.masked_fill(mask, -1e4); // ok: mpnanny-fp16-constant-range
  auto d = scores.masked_fill(mask, -65504.0); // ok: mpnanny-fp16-constant-range
  auto e = scores.to(torch::kFloat).masked_fill(mask, -1e9); // ok: mpnanny-fp16-constant-range
  return a + b + c + d + e;
}

torch::Tensor bf16_attention(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kBFloat16);
  return h.masked_fill(mask, -1e9); // ok: mpnanny-fp16-constant-range
}

torch::Tensor autocast_attention(torch::Tensor q, torch::Tensor k, torch::Tensor mask) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto masked = scores.masked_fill(mask, -1e9); // expect: mpnanny-fp16-constant-range
  auto upcast = scores.to(torch::kFloat).masked_fill(mask, -1e9); // ok: mpnanny-fp16-constant-range
  at::autocast::set_enabled(false);
  return masked + upcast;
}
