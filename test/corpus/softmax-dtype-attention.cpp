// Attention probabilities in a model converted to fp16: a softmax stored in fp16 turns
// probabilities below 2.98e-8 into 0 (torch/nn#804). HF models upcast: softmax(x, -1, float32).
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct AttentionImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    auto scores = torch::matmul(q, k.transpose(-2, -1));
    auto p = torch::softmax(scores, -1); // expect: mpnanny-softmax-dtype
    auto p32 = torch::softmax(scores, -1, torch::kFloat); // ok: mpnanny-softmax-dtype
    auto p_up = scores.to(torch::kFloat).softmax(-1); // ok: mpnanny-softmax-dtype
    auto p_method = scores.softmax(-1); // expect: mpnanny-softmax-dtype
    return torch::matmul(p + p_method + p32.to(q.scalar_type()) + p_up, v);
  }
};
TORCH_MODULE(Attention);

void build_half() {
  Attention attn;
  attn->to(torch::kCUDA, torch::kHalf);
}

torch::Tensor autocast_attention(torch::Tensor q, torch::Tensor k) {
  at::autocast::set_enabled(true);
  auto p = torch::softmax(torch::matmul(q, k), -1); // ok: mpnanny-softmax-dtype
  at::autocast::set_enabled(false);
  return p;
}
