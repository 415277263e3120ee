// Position ids from an attention mask (HF: attention_mask.long().cumsum(-1) - 1): a running
// count stored in fp16 collides past 2048 (2048 + 1 = 2048), in bf16 past 256.
#include <torch/torch.h>

torch::Tensor position_ids_half(torch::Tensor attention_mask) {
  auto mask = attention_mask.to(torch::kHalf);
  auto pos = mask.cumsum(-1) - 1; // expect: mpnanny-unscaled-sum
  auto pos_long = attention_mask.to(torch::kLong).cumsum(-1) - 1; // ok: mpnanny-unscaled-sum
  auto pos_float = mask.cumsum(-1, torch::kFloat) - 1; // ok: mpnanny-unscaled-sum
  auto pos_fn = torch::cumsum(mask, -1); // expect: mpnanny-unscaled-sum
  return pos + pos_long + pos_float + pos_fn;
}

torch::Tensor position_ids_bf16(torch::Tensor attention_mask) {
  auto mask = attention_mask.to(torch::kBFloat16);
  auto pos = mask.cumsum(-1); // expect: mpnanny-unscaled-sum
  auto hits = (mask > 0).cumsum(-1); // ok: mpnanny-unscaled-sum
  return pos + hits;
}
