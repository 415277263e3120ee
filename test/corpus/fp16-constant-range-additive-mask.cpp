// BERT-style additive attention masks on half data: `(1 - mask) * -1e9` is -inf in fp16
// (and 0 * -inf = NaN where the kernel rounds the scalar first). The fixes: -1e4, an fp32
// mask, or bf16 (transformers replaced -10000.0 with finfo(dtype).min for this reason).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

torch::Tensor half_bert_mask(torch::Tensor scores, torch::Tensor attention_mask) {
  auto s = scores.to(torch::kHalf);
  auto ext = attention_mask.to(torch::kHalf);
  auto bad = s + (1.0 - ext) * -1e9; // expect: mpnanny-fp16-constant-range
  auto bad2 = s + ext * -1e10; // expect: mpnanny-fp16-constant-range
  auto good = s + (1.0 - ext) * -1e4; // ok: mpnanny-fp16-constant-range
  auto fp32 = s.to(torch::kFloat) + (1.0 - ext.to(torch::kFloat)) * -1e9; // ok: mpnanny-fp16-constant-range
  return bad + bad2 + good + fp32;
}

torch::Tensor bf16_bert_mask(torch::Tensor scores, torch::Tensor attention_mask) {
  auto s = scores.to(torch::kBFloat16);
  return s + (1.0 - attention_mask.to(torch::kBFloat16)) * -1e9; // ok: mpnanny-fp16-constant-range
}

torch::Tensor autocast_bert_mask(torch::Tensor q, torch::Tensor k, torch::Tensor attention_mask) {
  at::autocast::set_enabled(true);
  auto s = torch::matmul(q, k);
  auto p = s + (1.0 - attention_mask) * -1e9; // ok: mpnanny-fp16-constant-range
  at::autocast::set_enabled(false);
  return p;
}
