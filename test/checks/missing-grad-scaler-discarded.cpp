// A unit that only times or tests backward(): it throws away every gradient it makes (resets
// them, never steps, clips, unscales or reads one), so a missing loss scale loses nothing there.
// The same unit with one use of a gradient trains, or inspects gradients, and is reported.
// RUN: %mpnanny_check --checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags | %FileCheckAll %s --check-prefix=DISCARDED --allow-empty
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags | %FileCheckAll %s --check-prefix=DISCARDED --allow-empty
// RUN: %mpnanny_check --checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags -DREADS_A_GRADIENT | FileCheck %s --check-prefix=USED
// RUN: %mpnanny_check --checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags -DSTEPS_AN_OPTIMIZER | FileCheck %s --check-prefix=USED
// RUN: %mpnanny_check --checks='-*,mpnanny-missing-grad-scaler' %s -- %check_flags -DSETS_A_GRADIENT | FileCheck %s --check-prefix=USED
// DISCARDED-NOT: warning:

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

double time_backward(Net net, torch::Tensor x) {
  net->to(torch::kHalf);
  auto loss = net(x.to(torch::kHalf)).sum();
  loss.backward();
  // USED: :[[@LINE-1]]:8: warning: Tensor::backward() on a loss whose forward ran in fp16 with no loss scaling
  for (auto &p : net->parameters())
    p.mutable_grad() = torch::Tensor();
  return 0.0;
}

double time_backward_of_an_input(torch::Tensor x) {
  auto input = x.to(torch::kHalf).detach().requires_grad_(true);
  auto loss = torch::mse_loss(input, input.detach());
  loss.backward();
  // USED: :[[@LINE-1]]:8: warning: Tensor::backward() on a loss whose forward ran in fp16 with no loss scaling
  input.grad().zero_();
  return 0.0;
}

double time_backward_under_autocast(Net net, torch::Tensor x) {
  at::autocast::set_enabled(true);
  auto loss = net(x).sum();
  loss.backward();
  // USED: :[[@LINE-1]]:8: warning: Tensor::backward() runs while autocast-fp16 is still enabled
  at::autocast::set_enabled(false);
  at::autocast::clear_cache();
  net->zero_grad();
  return 0.0;
}

#ifdef READS_A_GRADIENT
torch::Tensor saliency(Net net) { return net->fc->weight.grad().abs(); }
#endif
#ifdef STEPS_AN_OPTIMIZER
void train_step(torch::optim::SGD &optimizer) { optimizer.step(); }
#endif
#ifdef SETS_A_GRADIENT
void accumulate(torch::Tensor p, torch::Tensor g) { p.mutable_grad() = g; }
#endif
