// The update, in a file of its own: it sees no forward, no loop and no autocast switch. The
// forwards run under autocast that the project declares, from code elsewhere.
#include <torch/torch.h>

void apply_update(torch::optim::Optimizer &opt) {
  opt.step();
}

// A loss handed in, under the autocast the project declares: nothing here says that autocast
// is still on at the backward, nor that the loss was left unscaled.
void finish(torch::Tensor loss) {
  loss.backward();
}
