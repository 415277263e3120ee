// Gradient accumulation: dividing by the number of micro-batches is not loss scaling.
#include <torch/torch.h>
#include <ATen/autocast_mode.h>

struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{256, 256};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void accumulate(Net net, std::vector<torch::Tensor> xs, torch::Tensor y, int64_t accum) {
  for (auto &x : xs) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    (loss / accum).backward(); // expect: mpnanny-missing-grad-scaler
  }
}

void accumulate_scaled(Net net, std::vector<torch::Tensor> xs, torch::Tensor y, int64_t accum,
                       float scale) {
  for (auto &x : xs) {
    at::autocast::set_enabled(true);
    auto loss = torch::mse_loss(net(x), y);
    at::autocast::set_enabled(false);
    at::autocast::clear_cache();
    (loss * scale / accum).backward(); // ok: mpnanny-missing-grad-scaler
    auto micro = loss / accum;
    micro *= scale;
    micro.backward(); // ok: mpnanny-missing-grad-scaler
  }
}
