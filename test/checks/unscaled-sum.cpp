// RUN: %mpnanny_check --checks='-*,mpnanny-unscaled-sum' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-unscaled-sum' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <ATen/autocast_mode.h>

// fp16 data: a total over every element, and every running total, is stored in fp16.
torch::Tensor half_totals(torch::Tensor x, torch::Tensor mask) {
  auto h = x.to(torch::kHalf);
  auto total = h.sum();
// CHECK: :[[@LINE-1]]:18: warning: Tensor::sum of fp16 values stores the total in fp16 (the kernel adds in float): a total above 65504 is inf, and one above 2048 {{.*}} [mpnanny-unscaled-sum]
  auto total2 = torch::sum(h);
// CHECK: :[[@LINE-1]]:17: warning: torch::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  auto running = h.cumsum(-1);
// CHECK: :[[@LINE-1]]:20: warning: Tensor::cumsum in fp16 keeps each running total in fp16: on CUDA the scan adds in fp16, so past 2048 adding 1 changes nothing{{.*}} [mpnanny-unscaled-sum]
  auto forced = h.sum(torch::kHalf);
// CHECK: :[[@LINE-1]]:19: warning: Tensor::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  auto nan_total = h.nansum();
// CHECK: :[[@LINE-1]]:22: warning: Tensor::nansum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]

  // Safe: an fp32 dtype or upcast; a sum over named dimensions of unknown size; integer data.
  auto a = h.sum(torch::kFloat);
  auto b = h.to(torch::kFloat).sum();
  auto c = h.cumsum(-1, torch::kFloat);
  auto d = h.sum(/*dim=*/1, /*keepdim=*/false);
  auto e = h.sum({0, 1}, /*keepdim=*/true);
  auto positions = mask.to(torch::kLong).cumsum(-1);
  auto hits = (h > 0).sum();
  auto count = h.ne(0).sum();
  auto f = h.sum(torch::kLong);
  return total + total2 + running + forced + nan_total + a + b + c + d + e + positions + hits +
         count + f;
}

// bf16: a total is rounded to 8 bits (documentation only), but running totals collide past 256.
torch::Tensor bf16_positions(torch::Tensor x) {
  auto h = x.to(torch::kBFloat16);
  auto total = h.sum();
  auto positions = h.cumsum(-1);
// CHECK: :[[@LINE-1]]:22: warning: Tensor::cumsum in bf16 keeps each running total with 8 significant bits: on CUDA past 256 {{.*}} [mpnanny-unscaled-sum]
  return total + positions;
}

// Under autocast sum and cumsum run in fp32 unless a dtype is given.
torch::Tensor autocast_totals(torch::Tensor q, torch::Tensor k) {
  at::autocast::set_enabled(true);
  auto scores = torch::matmul(q, k);
  auto total = scores.sum();
  auto running = scores.cumsum(-1);
  auto forced = scores.sum(torch::kHalf);
// CHECK: :[[@LINE-1]]:24: warning: Tensor::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  at::autocast::set_enabled(false);
  return total + running + forced;
}

// A sum over three or more named dimensions (C, H and W of a latent) adds a whole sample,
// written at the call, through a local, or through a parameter's default; one or two named
// dimensions, or a list the code does not write out, are of unknown size.
torch::Tensor half_kl(torch::Tensor mean, torch::Tensor logvar, torch::Tensor pixels,
                      std::vector<int64_t> dims = {1, 2, 3}) {
  auto m = mean.to(torch::kHalf);
  auto lv = logvar.to(torch::kHalf);
  auto kl = torch::sum(torch::pow(m, 2) + torch::exp(lv) - 1.0f - lv, {1, 2, 3});
// CHECK: :[[@LINE-1]]:13: warning: torch::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  std::vector<int64_t> spatial = {1, 2, 3};
  auto energy = m.sum(spatial);
// CHECK: :[[@LINE-1]]:19: warning: Tensor::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  auto nll = torch::sum(lv, dims);
// CHECK: :[[@LINE-1]]:14: warning: torch::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  auto per_row = m.sum({2, 3});
  auto per_channel = torch::sum(lv, pixels.sizes());
  auto running = m.mean({1, 2, 3});
  return kl + energy + nll + per_row + per_channel + running;
}

// Plain fp32 code: never reported.
torch::Tensor fp32_only(torch::Tensor x) { return x.sum() + x.cumsum(0); }

// Tensors the function itself shows to hold integers, although nothing gives their dtype:
// an integer element view (ATen checks the type when it makes one), an index argument
// (ATen's `index` parameters take integers only), or the integer source of index_add_,
// which requires its self to have the source's dtype. Their running totals are exact.
torch::Tensor integer_evidence(torch::Tensor x, torch::Tensor lengths, torch::Tensor offsets,
                               torch::Tensor bags, torch::Tensor layout, torch::Tensor values,
                               torch::Tensor weights) {
  auto h = x.to(torch::kHalf);
  int64_t *first = lengths.data_ptr<int64_t>();
  auto ends = lengths.cumsum(0);
  auto rows = h.index_select(0, offsets);
  auto starts = offsets.cumsum(0);
  bags.index_add_(0, offsets, torch::ones_like(offsets, offsets.options()));
  auto bag_of = bags.cumsum(0);
  auto blocks = layout.accessor<int, 3>();
  auto nonzero = layout.sum();
  auto marks = torch::zeros_like(layout).cumsum(0);
  // Reported: a float element view, and an index_add_ whose source may be half.
  float *raw = values.data_ptr<float>();
  auto running = values.cumsum(0);
// CHECK: :[[@LINE-1]]:25: warning: Tensor::cumsum in fp16 {{.*}} [mpnanny-unscaled-sum]
  weights.index_add_(0, offsets, h);
  auto weighted = weights.cumsum(0);
// CHECK: :[[@LINE-1]]:27: warning: Tensor::cumsum in fp16 {{.*}} [mpnanny-unscaled-sum]
  return ends + rows + starts + bag_of + nonzero + marks + running + weighted;
}

// A total only compared with 0 is read for its sign, which half keeps (inf included).
bool all_zero(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  bool empty = h.sum().item<float>() == 0.f;
  auto positive = h.sum() > 0;
  auto nonzero = h.sum().ne(0);
  // Reported: compared with another value, or kept.
  bool large = h.sum().item<float>() > 100.f;
// CHECK: :[[@LINE-1]]:18: warning: Tensor::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  auto total = h.sum();
// CHECK: :[[@LINE-1]]:18: warning: Tensor::sum of fp16 values stores the total{{.*}} [mpnanny-unscaled-sum]
  return empty && large && positive.item<bool>() && nonzero.item<bool>() && total.item<float>() != 0;
}

// Gradient accumulation: backward() on every pass of a loop and step() after it adds the passes'
// gradients into .grad, which has the parameters' dtype.
struct NetImpl : torch::nn::Module {
  torch::nn::Linear fc{4, 4};
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
};
TORCH_MODULE(Net);

void accumulate_bf16(Net net, std::vector<torch::Tensor> batches, int steps) {
  net->to(torch::kBFloat16);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01));
  for (int s = 0; s < steps; ++s) {
    for (auto &b : batches) {
      auto loss = net->forward(b.to(torch::kBFloat16)).sum(-1).mean();
      loss.backward();
// CHECK: :[[@LINE-1]]:7: warning: backward() runs on every pass of this loop and the optimizer steps only after it: each pass adds its gradient into the bf16 .grad of bf16 parameters{{.*}}8 significant bits: a share below 1/256 of the total rounds away) [mpnanny-unscaled-sum]
    }
    opt.step();
    opt.zero_grad();
  }
}

// Not reported: fp32 parameters (their .grad is fp32), a loop that zeroes the gradients on every
// pass, and a step inside the loop.
void accumulate_fp32(Net net, std::vector<torch::Tensor> batches) {
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01));
  for (auto &b : batches)
    net->forward(b).sum(-1).mean().backward();
  opt.step();
}

void no_accumulation(Net net, std::vector<torch::Tensor> batches) {
  net->to(torch::kHalf);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01));
  for (auto &b : batches) {
    net->zero_grad();
    net->forward(b).sum(-1).mean().backward();
  }
  opt.step();
  for (auto &b : batches) {
    net->forward(b).sum(-1).mean().backward();
    opt.step();
    opt.zero_grad();
  }
}
