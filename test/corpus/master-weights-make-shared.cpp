// Optimizers held by shared_ptr, over a half model and over one converted back to fp32.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{64, 64};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

std::shared_ptr<torch::optim::Optimizer> make_half(Net net) {
  net->to(torch::kHalf);
  auto opt = std::make_shared<torch::optim::Adam>(net->parameters()); // expect: mpnanny-master-weights
  return opt;
}

std::shared_ptr<torch::optim::Optimizer> make_restored(Net net) {
  net->to(torch::kHalf);
  net->to(torch::kFloat);
  auto opt = std::make_shared<torch::optim::Adam>(net->parameters()); // ok: mpnanny-master-weights
  return opt;
}

std::unique_ptr<torch::optim::Optimizer> make_fp32(Net net) {
  return std::make_unique<torch::optim::SGD>(net->parameters(), torch::optim::SGDOptions(0.1)); // ok: mpnanny-master-weights
}
