#include "net.h"

NetImpl::NetImpl() { block = register_module("block", Block()); }

torch::Tensor NetImpl::forward(torch::Tensor x) {
  return block->forward(x).masked_fill(x > 0, -1e9);
}

torch::Tensor BlockImpl::forward(torch::Tensor x) {
  return x.clamp_min(1e-12);
}

// Called under autocast from train.cpp: matmul's result is fp16 there, and -1e9 is not.
torch::Tensor scores(torch::Tensor q, torch::Tensor k) {
  return torch::matmul(q, k).masked_fill(q > 0, -1e9);
}
