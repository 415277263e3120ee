// The model's class: declared here, defined in layers.cpp, converted to half in main.cpp.
#pragma once
#include <torch/torch.h>

struct BlockImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x);
};
TORCH_MODULE(Block);

struct NetImpl : torch::nn::Module {
  NetImpl();
  torch::Tensor forward(torch::Tensor x);
  Block block{nullptr};
};
TORCH_MODULE(Net);

// A trainer helper that leaves autocast on for its caller (defined in amp.cpp).
void enable_amp();
torch::Tensor scores(torch::Tensor q, torch::Tensor k);
