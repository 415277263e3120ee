// A small attention classifier, written the way many LibTorch models are: it trains
// in fp16 on a GPU and in fp32 on a CPU. It carries hazards mpnanny is built to find
// (a -1e9 mask fill, a backward pass without loss scaling) next to safe code (LayerNorm's eps
// of 1e-12, added in float by its kernel; an fp16 softmax used only as attention weights).
#include <mpnanny/Nanny.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <iostream>

struct AttentionBlockImpl : torch::nn::Module {
  AttentionBlockImpl(int64_t dim, int64_t heads)
      : dim_(dim), heads_(heads),
        qkv(register_module("qkv", torch::nn::Linear(dim, 3 * dim))),
        proj(register_module("proj", torch::nn::Linear(dim, dim))),
        norm(register_module("norm", torch::nn::LayerNorm(
                                         torch::nn::LayerNormOptions({dim}).eps(1e-12)))) {}

  torch::Tensor forward(torch::Tensor x, torch::Tensor mask) {
    const int64_t batch = x.size(0), seq = x.size(1), head_dim = dim_ / heads_;
    auto parts = qkv(x).chunk(3, -1);
    auto split = [&](const torch::Tensor &t) {
      return t.view({batch, seq, heads_, head_dim}).transpose(1, 2);
    };
    auto q = split(parts[0]), k = split(parts[1]), v = split(parts[2]);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim));
    scores = scores.masked_fill(mask, -1e9);
    auto attn = torch::softmax(scores, -1);
    auto context = torch::matmul(attn, v).transpose(1, 2).reshape({batch, seq, dim_});
    return norm(x + proj(context));
  }

  int64_t dim_, heads_;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm norm;
};
TORCH_MODULE(AttentionBlock);

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl(int64_t vocab, int64_t dim, int64_t classes)
      : embed(register_module("embed", torch::nn::Embedding(vocab, dim))),
        block(register_module("block", AttentionBlock(dim, 4))),
        head(register_module("head", torch::nn::Linear(dim, classes))) {}

  torch::Tensor forward(torch::Tensor tokens, torch::Tensor padding) {
    // Padding positions may not be attended to: (batch, 1, 1, seq).
    auto mask = padding.unsqueeze(1).unsqueeze(2);
    auto h = block(embed(tokens), mask);
    // Average over the real tokens only; the count is at least 1 per row.
    auto keep = (~padding).unsqueeze(-1).to(h.scalar_type());
    auto pooled = (h * keep).sum(1) / keep.sum(1).clamp_min(1.0);
    return head(pooled);
  }

  torch::nn::Embedding embed;
  AttentionBlock block;
  torch::nn::Linear head;
};
TORCH_MODULE(Classifier);

int main(int argc, char **argv) {
  torch::manual_seed(0);
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 30;
  const int64_t vocab = 64, dim = 32, classes = 4, batch = 16, seq = 12;

  // Half precision where the hardware runs it. A CPU run is fp32, or bf16 with EXAMPLE_DTYPE=bf16
  // (to compare the two with `mpnanny compare`), or fp16 with EXAMPLE_DTYPE=fp16 on LibTorch 2.x
  // (1.13 has no fp16 matmul on the CPU).
  const bool cuda = torch::cuda::is_available();
  const char *requested = std::getenv("EXAMPLE_DTYPE");
  const bool bf16 = requested && std::string(requested) == mpnanny::to_string(mpnanny::Precision::BF16);
  const bool fp16 = requested && std::string(requested) == mpnanny::to_string(mpnanny::Precision::FP16);
  const torch::Device device = cuda ? torch::kCUDA : torch::kCPU;
  const torch::Dtype dtype = cuda || fp16 ? torch::kHalf : bf16 ? torch::kBFloat16 : torch::kFloat;
  // EXAMPLE_LOSS=manual spells the loss out by hand, the way it is often first written. The demo
  // never sets it, so site verification reports that line as never reached.
  const char *loss_kind = std::getenv("EXAMPLE_LOSS");
  const bool manual_loss = loss_kind && std::string(loss_kind) == "manual";

  Classifier model(vocab, dim, classes);
  model->to(device, dtype);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));

  // A synthetic task: the class is the most frequent token's bucket.
  auto tokens = torch::randint(vocab, {batch, seq}, torch::TensorOptions().dtype(torch::kLong));
  auto lengths = torch::randint(seq / 2, seq + 1, {batch, 1});
  auto padding = torch::arange(seq).unsqueeze(0) >= lengths;
  auto labels = std::get<0>(tokens.remainder(classes).mode(1));
  tokens = tokens.to(device);
  padding = padding.to(device);
  labels = labels.to(device);

  // mpnanny watches the run: alerts and statistics go to nanny_logs/metrics.db.
  mpnanny::Options nanny_options;
  nanny_options.trace_interval = 10;
  mpnanny::Nanny nanny(model, nanny_options);
  int64_t step = 0;
  try {
    for (; step < steps; ++step) {
      auto nanny_step = nanny.step(step);
      optimizer.zero_grad();
      auto logits = model->forward(tokens, padding);
      torch::Tensor loss;
      if (manual_loss)
        loss = torch::nll_loss(torch::log(torch::softmax(logits, -1)), labels);
      else
        loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels);
      loss.backward();
      optimizer.step();
      nanny.record_scalar("loss", loss.item<double>());
      if (step % 10 == 0 || step + 1 == steps)
        std::cout << "step " << step << " loss " << loss.item<float>() << "\n";
    }
  } catch (const std::exception &error) {
    // In fp16 the -1e9 mask fill does not fit, and LibTorch raises: the run ends here, and the
    // nanny still writes down what it saw.
    std::cerr << "training stopped at step " << step << ": " << error.what() << "\n";
    nanny.close();
    return 1;
  }
  nanny.close();
  return 0;
}
