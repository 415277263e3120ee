// A training program with no mpnanny code at all, only linked with mpnanny::runtime:
// MPNANNY_VERIFY=1 alone must verify its sites (run_e2e.py writes them, finding each line by its
// `site:` comment). Each loop iteration is one forward and one backward pass, so the runtime's
// implicit steps and the loop's iterations must agree.
#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>

int main(int argc, char** argv) {
  torch::manual_seed(0);
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 4;
  // e^12 = 162755 overflows fp16; run_e2e.py passes 1 where it needs a run without alerts.
  const double exponent = argc > 2 ? std::atof(argv[2]) : 12.0;
  torch::nn::Linear layer(8, 8);
  torch::optim::SGD optimizer(layer->parameters(), torch::optim::SGDOptions(0.01));
  const auto x = torch::randn({4, 8});
  for (int64_t step = 0; step < steps; ++step) {
    optimizer.zero_grad();
    auto h = layer(x);
    auto big = torch::exp(h.abs() * 0.0 + exponent);  // site: overflow
    auto probabilities = torch::softmax(h, -1);   // site: healthy
    if (step < 0) probabilities = torch::log(probabilities);  // site: never taken
    auto loss = big.mean() * 1e-6 + probabilities.pow(2).sum();
    loss.backward();
    optimizer.step();
  }
  // Evaluation after training (grad mode off) is not a step.
  torch::NoGradGuard no_grad;
  auto evaluation = torch::softmax(layer(x), -1);
  return evaluation.size(0) == 4 ? 0 : 1;
}
