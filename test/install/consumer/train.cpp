// Trains a layer whose outputs (about 144000) are beyond fp16's 65504, with the installed nanny.
// Usage: consumer OUTPUT_DIR
#include <mpnanny/Nanny.h>
#include <torch/torch.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  torch::manual_seed(0);
  torch::nn::Linear layer(16, 4);
  {
    torch::NoGradGuard no_grad;
    layer->weight.fill_(4500);
    layer->bias.zero_();
  }
  torch::optim::SGD optimizer(layer->parameters(), 1e-9);
  mpnanny::Options options;
  options.trace_interval = 1;
  options.output_dir = argv[1];
  options.precision = mpnanny::Precision::FP16;
  mpnanny::Nanny nanny(layer, options);
  const torch::Tensor inputs = torch::full({8, 16}, 2.0);
  for (int64_t step = 0; step < 3; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    const torch::Tensor outputs = layer->forward(inputs);  // OVERFLOW
    const torch::Tensor loss = outputs.mean() * 1e-6;
    loss.backward();
    optimizer.step();
    nanny.record_scalar("loss", loss.item<double>());
  }
  nanny.close();
  return 0;
}
