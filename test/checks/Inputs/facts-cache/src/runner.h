// A training step split over calls, as runtimes that interleave phases write it: one call
// runs the forward, a later one the optimizer step. The loop that drives it is in loop.cpp.
#pragma once
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

struct Runner {
  Net net;
  torch::optim::Adam opt{net->parameters()};
  torch::Tensor x, y;
  int phase = 0;
  void advance();
  void record(const char *stage);
};
void fit(Runner &runner);
