// A mixture-of-experts gate in a model converted to half: gate weights by hand.
#include <torch/torch.h>

struct GateImpl : torch::nn::Module {
  torch::nn::Linear proj{8, 4};
  torch::Tensor forward(torch::Tensor x) {
    auto logits = proj(x);
    auto w = logits.exp() / logits.exp().sum(-1, true); // ok: mpnanny-risky-op // expect: mpnanny-naive-softmax
    auto shifted = (logits - logits.amax(-1, true)).exp(); // ok: mpnanny-risky-op
    auto w2 = shifted / shifted.sum(-1, true); // ok: mpnanny-naive-softmax
    auto w3 = torch::softmax(logits, -1, torch::kFloat); // ok: mpnanny-naive-softmax
    auto scores = torch::sigmoid(logits);
    auto w4 = scores / (scores.sum(-1, true) + 1e-3); // ok: mpnanny-naive-softmax
    return w + w2 + w3 + w4;
  }
};
TORCH_MODULE(Gate);

void convert_gate() {
  Gate gate;
  gate->to(torch::kHalf);
}
