// Adam's eps 1e-8 is 0 in fp16 (chainer#6299, glide-finetune#5, apex PR #799): with
// half parameters and optimizer state, the update m / (sqrt(v) + eps) divides by 0.
#include <torch/torch.h>

struct TinyNetImpl : torch::nn::Module {
  torch::nn::Linear fc{torch::nn::LinearOptions(16, 16)};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(TinyNet);

void train_half() {
  TinyNet net;
  net->to(torch::kHalf);
  torch::optim::Adam bad(net->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-8)); // expect: mpnanny-fp16-constant-range, mpnanny-master-weights
  torch::optim::Adam good(net->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-4)); // ok: mpnanny-fp16-constant-range // expect: mpnanny-master-weights
  torch::optim::AdamW w(net->parameters(), torch::optim::AdamWOptions(1e-3).eps(1e-10)); // expect: mpnanny-fp16-constant-range, mpnanny-master-weights
  torch::optim::AdamW w_ok(net->parameters(), torch::optim::AdamWOptions(1e-3).eps(1e-3)); // ok: mpnanny-fp16-constant-range // expect: mpnanny-master-weights
}

void train_fp32() {
  TinyNet net;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-8)); // ok: mpnanny-fp16-constant-range
}
