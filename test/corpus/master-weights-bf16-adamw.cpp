// torchdistx PR #52: pure bf16 AdamW loses updates below 0.2-0.4 % of a weight.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct BlockImpl : torch::nn::Module {
  torch::nn::Linear qkv{768, 2304}, out{768, 768};
  torch::Tensor forward(torch::Tensor x) { return out(qkv(x)); }
};
TORCH_MODULE(Block);

void pure_bf16(Block block) {
  block->to(torch::kBFloat16);
  torch::optim::AdamW opt(block->parameters(), torch::optim::AdamWOptions(1e-4)); // expect: mpnanny-master-weights
}

void autocast_bf16(Block block) {
  torch::optim::AdamW opt(block->parameters(), torch::optim::AdamWOptions(1e-4)); // ok: mpnanny-master-weights
  torch::optim::SGD probe(block->parameters(), torch::optim::SGDOptions(1e-2)); // ok: mpnanny-master-weights
  at::autocast::set_cpu_enabled(true);
}

void bf16_inference_copy(Block block, Block frozen) {
  frozen->to(torch::kBFloat16);
  torch::optim::AdamW opt(block->parameters(), torch::optim::AdamWOptions(1e-4)); // ok: mpnanny-master-weights
}
