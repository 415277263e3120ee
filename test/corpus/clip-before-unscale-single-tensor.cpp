// Clipping one parameter (the Tensor overload) between a scaled backward and the step.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

struct EmbedImpl : torch::nn::Module {
  torch::nn::Linear out{300, 300};
  torch::Tensor forward(torch::Tensor x) { return out(x); }
};
TORCH_MODULE(Embed);

void step(Embed model, mpnanny::GradScaler &scaler, torch::optim::Optimizer &opt, torch::Tensor x,
          torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(model(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  scaler.scale(loss).backward();
  torch::nn::utils::clip_grad_norm_(model->out->weight, 1.0); // expect: mpnanny-clip-before-unscale
  scaler.unscale_(opt);
  torch::nn::utils::clip_grad_norm_(model->out->weight, 1.0); // ok: mpnanny-clip-before-unscale
  scaler.step(opt);
  scaler.update();
}

void plain_fp32(Embed model, torch::optim::Optimizer &opt, torch::Tensor x, torch::Tensor y) {
  (torch::mse_loss(model(x), y) * 8.0).backward();
  torch::nn::utils::clip_grad_norm_(model->out->weight, 1.0); // ok: mpnanny-clip-before-unscale
  opt.step();
}
