// Autocast helpers, defined in amp.cpp and called from train.cpp.
#pragma once
#include <torch/torch.h>

void enable_cpu_amp();
torch::Tensor evaluate_restoring(torch::Tensor x);
