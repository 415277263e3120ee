// fp16 autocast left before backward, as recommended, but the loss is not scaled.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct EncoderImpl : torch::nn::Module {
  torch::nn::Linear proj{512, 512};
  torch::nn::LayerNorm norm{std::vector<int64_t>{512}};
  torch::Tensor forward(torch::Tensor x) { return norm(proj(x)); }
};
TORCH_MODULE(Encoder);

void step_unscaled(Encoder enc, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(enc(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  loss.backward(); // expect: mpnanny-missing-grad-scaler
}

void step_scaled(Encoder enc, mpnanny::GradScaler &scaler, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(enc(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward(); // ok: mpnanny-missing-grad-scaler
}

void step_fp32(Encoder enc, torch::Tensor x, torch::Tensor y) {
  auto loss = torch::mse_loss(enc(x), y);
  loss.backward(); // ok: mpnanny-missing-grad-scaler
}
