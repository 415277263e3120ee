// An init scale far above 2^24 overflows every scaled fp16 gradient at the start.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>
#include <mpnanny/grad_scaler.h>

void scalers() {
  at::autocast::set_enabled(true);
  mpnanny::GradScaler huge(1e9); // expect: mpnanny-grad-scaler-config
  mpnanny::GradScaler tiny(0.25); // expect: mpnanny-grad-scaler-config
  mpnanny::GradScaler defaults(65536.0); // ok: mpnanny-grad-scaler-config
  mpnanny::GradScaler modest(1024.0, 2.0, 0.5, 2000); // ok: mpnanny-grad-scaler-config
  mpnanny::GradScaler big(16777216.0); // ok: mpnanny-grad-scaler-config
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
}
