// The update, in a file of its own: it sees no forward, no loop and no autocast switch. The
// forwards run under autocast that the project declares, from code elsewhere.
#include <torch/torch.h>

void apply_update(torch::optim::Optimizer &opt) {
  opt.step();
}
