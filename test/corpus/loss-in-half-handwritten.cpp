// Hand-written losses in a model converted to fp16: the squared error is fp16 (inf above 255.9)
// and so is a summed total (inf above 65504); a mean of absolute errors adds in float.
#include <torch/torch.h>

struct AutoencoderImpl : torch::nn::Module {
  torch::nn::Linear enc{64, 8}, dec{8, 64};
  torch::Tensor forward(torch::Tensor x) { return dec(enc(x)); }
  torch::Tensor train_step(torch::Tensor x) {
    auto recon = forward(x);
    auto recon_loss = (recon - x).pow(2).mean(); // expect: mpnanny-loss-in-half
    auto l1_loss = (recon - x).abs().mean() / 64; // ok: mpnanny-loss-in-half
    auto sum_loss = (recon - x).abs().sum(); // expect: mpnanny-loss-in-half, mpnanny-unscaled-sum
    auto rf = recon.to(torch::kFloat);
    auto safe_loss = (rf - x.to(torch::kFloat)).pow(2).mean(); // ok: mpnanny-loss-in-half
    auto loss_scale = torch::ones({1}); // ok: mpnanny-loss-in-half
    return recon_loss + l1_loss + sum_loss + safe_loss * loss_scale;
  }
};
TORCH_MODULE(Autoencoder);

void build() {
  Autoencoder ae;
  ae->to(torch::kHalf);
}
