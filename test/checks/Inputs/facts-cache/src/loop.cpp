#include "runner.h"
#include <ATen/autocast_mode.h>

void fit(Runner &runner) {
  for (int it = 0; it < 1000; ++it) {
    at::autocast::set_enabled(true);
    runner.advance();
    at::autocast::set_enabled(false);
    if (runner.phase == 0)
      at::autocast::clear_cache();
  }
}
