// A hand-rolled dynamic scaler with a backoff that never backs off.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct AmpScaler {
  float scale = 65536.0f;
  float growth_factor = 2.0f; // ok: mpnanny-grad-scaler-config
  float backoff_factor = 1.0f; // expect: mpnanny-grad-scaler-config
  int growth_interval = 2000; // ok: mpnanny-grad-scaler-config
  int good_steps = 0;
  void update(bool found_inf) {
    if (found_inf) {
      scale *= backoff_factor;
      good_steps = 0;
    } else if (++good_steps % growth_interval == 0) {
      scale *= growth_factor;
    }
  }
};

void train_step(torch::nn::Linear net, AmpScaler &scaler, torch::Tensor x, torch::Tensor y) {
  at::autocast::set_enabled(true);
  auto loss = torch::mse_loss(net(x), y);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  (loss * scaler.scale).backward();
  scaler.growth_interval = 10; // expect: mpnanny-grad-scaler-config
  scaler.growth_interval = 500; // ok: mpnanny-grad-scaler-config
}
