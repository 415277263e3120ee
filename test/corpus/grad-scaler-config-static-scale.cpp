// A static loss scale of 2^17 in an fp16 loss: 131072 is not even an fp16 number.
#include <torch/torch.h>

void half_static(torch::Tensor raw_loss) {
  auto loss = raw_loss.to(torch::kHalf);
  auto scaled = loss * 131072.0; // expect: mpnanny-grad-scaler-config
  auto fine = loss * 1024.0; // ok: mpnanny-grad-scaler-config
  auto upcast = loss.to(torch::kFloat) * 131072.0; // ok: mpnanny-grad-scaler-config
  scaled.backward();
}

void half_static_member(torch::Tensor raw_loss) {
  struct { double loss_scale = 262144.0; } cfg;
  auto loss = raw_loss.to(torch::kHalf);
  loss.mul(cfg.loss_scale).backward(); // expect: mpnanny-grad-scaler-config
}

void bf16_static(torch::Tensor raw_loss) {
  auto loss = raw_loss.to(torch::kBFloat16);
  (loss * 131072.0).backward(); // ok: mpnanny-grad-scaler-config
}
