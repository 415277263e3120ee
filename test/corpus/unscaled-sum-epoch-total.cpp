// A model converted to fp16 that sums its outputs: a total over every element is stored in
// fp16. A sum over one dimension of unknown size is not reported (usually a short row).
#include <torch/torch.h>

struct ScorerImpl : torch::nn::Module {
  torch::nn::Linear fc{256, 256};
  torch::Tensor forward(torch::Tensor x) {
    auto h = fc(x);
    auto energy = h.sum(); // expect: mpnanny-unscaled-sum
    auto energy2 = torch::sum(h); // expect: mpnanny-unscaled-sum
    auto row = h.sum(1, /*keepdim=*/true); // ok: mpnanny-unscaled-sum
    auto energy32 = h.to(torch::kFloat).sum(); // ok: mpnanny-unscaled-sum
    auto energy_dtype = torch::sum(h, torch::kFloat); // ok: mpnanny-unscaled-sum
    return energy + energy2 + row + energy32 + energy_dtype;
  }
};
TORCH_MODULE(Scorer);

void build() {
  Scorer scorer;
  scorer->to(torch::kHalf);
}
