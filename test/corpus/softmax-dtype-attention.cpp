// Softmax in a model converted to fp16: stored in fp16, probabilities below 2.98e-8 become 0
// (torch/nn#804). As attention weights that changes nothing (a weight of 3e-8 adds nothing to
// the weighted sum either); in a top-p cut, a cumsum, the lost tail ends the cut early.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct AttentionImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    auto scores = torch::matmul(q, k.transpose(-2, -1));
    auto p = torch::softmax(scores, -1); // ok: mpnanny-softmax-dtype (attention weights)
    auto p32 = torch::softmax(scores, -1, torch::kFloat); // ok: mpnanny-softmax-dtype
    auto p_up = scores.to(torch::kFloat).softmax(-1); // ok: mpnanny-softmax-dtype
    auto p_method = scores.softmax(-1); // ok: mpnanny-softmax-dtype (attention weights)
    return torch::matmul(p + p_method + p32.to(q.scalar_type()) + p_up, v);
  }
};
TORCH_MODULE(Attention);

struct SamplerImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor logits, double top_p) {
    auto probs = logits.softmax(-1); // expect: mpnanny-softmax-dtype
    auto [sorted, order] = probs.sort(-1, /*descending=*/true);
    auto cut = sorted.to(torch::kFloat).cumsum(-1) > top_p;
    auto safe = torch::softmax(logits, -1, torch::kFloat); // ok: mpnanny-softmax-dtype
    return torch::cat({order.masked_fill(cut, 0), safe.cumsum(-1)});
  }
};
TORCH_MODULE(Sampler);

void build_half() {
  Attention attn;
  attn->to(torch::kCUDA, torch::kHalf);
  Sampler sampler;
  sampler->to(torch::kHalf);
}

torch::Tensor autocast_attention(torch::Tensor q, torch::Tensor k) {
  at::autocast::set_enabled(true);
  auto p = torch::softmax(torch::matmul(q, k), -1); // ok: mpnanny-softmax-dtype
  at::autocast::set_enabled(false);
  return p;
}
