#include "runner.h"

void Runner::advance() {
  if (phase == 0) {
    torch::mse_loss(net(x), y).backward();
    record("forward");
    phase = 1;
  } else {
    opt.step();
    record("step");
    phase = 0;
  }
}
