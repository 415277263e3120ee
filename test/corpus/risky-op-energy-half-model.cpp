// An energy-based head in a model converted with ->to(kHalf): exp and pow run in fp16.
// exp overflows fp16 for x > 11.09 and x.pow(2) for |x| > 255.9 (KNOWLEDGE.md, derived).
#include <torch/torch.h>

struct EnergyHeadImpl : torch::nn::Module {
  torch::nn::Linear proj{torch::nn::LinearOptions(64, 64)};
  torch::Tensor forward(torch::Tensor x) {
    auto logits = proj(x);
    auto unnormalized = torch::exp(logits); // ok: mpnanny-risky-op
    auto energy = logits.pow(2); // expect: mpnanny-risky-op
    auto stable = torch::exp(logits.to(torch::kFloat)); // ok: mpnanny-risky-op
    auto squared = logits.to(torch::kFloat).pow(2); // ok: mpnanny-risky-op
    auto bounded = logits.sigmoid(); // ok: mpnanny-risky-op
    return unnormalized + energy + stable + squared + bounded;
  }
};
TORCH_MODULE(EnergyHead);

void train_half() {
  EnergyHead head;
  head->to(torch::kHalf);
}
