// Raw parameter tensors created in half precision and handed to Adam.
#include <torch/torch.h>

void half_tensors() {
  auto w = torch::randn({256, 256}, torch::dtype(torch::kHalf)).requires_grad_();
  auto b = torch::zeros({256}, torch::dtype(torch::kHalf)).requires_grad_();
  torch::optim::Adam opt({w, b}, torch::optim::AdamOptions(3e-4)); // expect: mpnanny-master-weights
}

void float_tensors() {
  auto w = torch::randn({256, 256}, torch::dtype(torch::kFloat)).requires_grad_();
  auto b = torch::zeros({256}).requires_grad_();
  torch::optim::Adam opt({w, b}, torch::optim::AdamOptions(3e-4)); // ok: mpnanny-master-weights
  auto w_half = w.to(torch::kHalf);
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.1)); // ok: mpnanny-master-weights
}

void bf16_list() {
  std::vector<torch::Tensor> params;
  params.push_back(torch::randn({64, 64}).to(torch::kBFloat16).requires_grad_());
  torch::optim::Adagrad opt(params); // expect: mpnanny-master-weights
}
