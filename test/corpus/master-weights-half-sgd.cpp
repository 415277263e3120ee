// A model moved to the GPU in fp16 and trained by SGD on its fp16 weights.
#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{1024, 1024};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void half_sgd(Net net) {
  net->to(torch::kCUDA, torch::kHalf);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(1e-3)); // expect: mpnanny-master-weights
}

void half_model_fp32_master(Net net) {
  net->to(torch::kCUDA, torch::kHalf);
  std::vector<torch::Tensor> master;
  for (auto &p : net->parameters())
    master.push_back(p.detach().clone().to(torch::kFloat).requires_grad_());
  torch::optim::SGD opt(master, torch::optim::SGDOptions(1e-3)); // ok: mpnanny-master-weights
}

void fp32_sgd(Net net, Net half_copy) {
  half_copy->to(torch::kHalf);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(1e-3)); // ok: mpnanny-master-weights
  torch::optim::Adam adam(std::vector<torch::Tensor>(net->parameters())); // ok: mpnanny-master-weights
}
