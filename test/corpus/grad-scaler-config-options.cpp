// mpnanny::GradScaler options out of bounds, next to sane ones.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

void make_scalers() {
  at::autocast::set_enabled(true);
  auto frozen = mpnanny::GradScalerOptions().growth_factor(1.0); // expect: mpnanny-grad-scaler-config
  auto stuck = mpnanny::GradScalerOptions().backoff_factor(1.0); // expect: mpnanny-grad-scaler-config
  auto jumpy = mpnanny::GradScalerOptions().growth_interval(20); // expect: mpnanny-grad-scaler-config
  auto sane = mpnanny::GradScalerOptions().growth_factor(2.0); // ok: mpnanny-grad-scaler-config
  auto gentle = mpnanny::GradScalerOptions().backoff_factor(0.25); // ok: mpnanny-grad-scaler-config
  auto patient = mpnanny::GradScalerOptions().growth_interval(1000); // ok: mpnanny-grad-scaler-config
  mpnanny::GradScaler scaler(sane);
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
}
