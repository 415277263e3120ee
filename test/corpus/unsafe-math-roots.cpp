// Square roots of activations: sqrt(0) has an infinite gradient, sqrt(<0) is NaN.
#include <torch/torch.h>

struct ScaleNetImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto r = torch::sqrt(torch::relu(x)); // expect: mpnanny-unsafe-math
    auto r_eps = torch::sqrt(torch::relu(x) + 1e-3); // ok: mpnanny-unsafe-math
    auto t = torch::tanh(x).sqrt(); // expect: mpnanny-unsafe-math
    auto s = torch::sigmoid(x).clamp_min(1e-4).sqrt(); // ok: mpnanny-unsafe-math
    auto u = x.sqrt(); // ok: mpnanny-unsafe-math
    auto q = torch::rsqrt(torch::relu(x) + 1e-8); // expect: mpnanny-fp16-constant-range
    auto q_ok = torch::rsqrt(torch::relu(x) + 1e-4); // ok: mpnanny-unsafe-math
    return r + r_eps + t + s + u + q + q_ok;
  }
};
TORCH_MODULE(ScaleNet);

void train_half() {
  ScaleNet net;
  net->to(torch::kHalf);
}
