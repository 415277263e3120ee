#include <torch/torch.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

torch::Tensor predict(Net &net, torch::Tensor x) {
  return net(x);
}
void after_step() {
  at::autocast::clear_cache();
}
