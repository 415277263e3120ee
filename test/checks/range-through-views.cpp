// RUN: %mpnanny_check --checks='-*,mpnanny-unsafe-math,mpnanny-log-softmax' %s -- %check_flags | %FileCheckAll %s
// RUN: %clang_tidy --load %plugin -checks='-*,mpnanny-unsafe-math,mpnanny-log-softmax' %s -- %check_flags | %FileCheckAll %s

#include <torch/torch.h>
#include <vector>

using torch::indexing::Slice;

// Probabilities keep their [0, 1] through indexing, views and joins: the log of any of them is
// -inf where fp16 stored a small probability as 0.
torch::Tensor gate_views(torch::Tensor x, torch::Tensor idx) {
  auto h = x.to(torch::kHalf);
  auto g = torch::sigmoid(h);
  auto a = torch::log(g.index({Slice(), 0}));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  auto b = g[0].log();
// CHECK: :[[@LINE-1]]:17: warning: Tensor::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  auto c = torch::log(torch::diagonal(g)) + torch::log(g.gather(1, idx).contiguous());
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
// CHECK: :[[@LINE-2]]:45: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  auto d = torch::log(torch::cat({g, 1 - g}, 1));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  auto e = torch::log(g.chunk(2, -1)[1]);
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  auto parts = g.split(4, -1);
  auto f = torch::log(parts[0]);
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  std::vector<torch::Tensor> pieces{g.t(), g.narrow(1, 0, 2)};
  auto k = torch::log(torch::stack(pieces));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of a value that may be 0 in fp16: it lies in [0, 1] (torch::sigmoid gives [0, 1]), and log(0) = -inf with an inf gradient [mpnanny-unsafe-math]
  // Guarded, or joined with a value of unknown range, or a list changed after it is made.
  auto m = torch::log(g.index({Slice(), 0}) + 1e-3) + torch::log(torch::cat({g.clamp_min(1e-3), g.clamp(1e-2, 1)}));
  auto n = torch::log(torch::cat({g, h}, 1));
  std::vector<torch::Tensor> grown{g};
  grown.push_back(h);
  auto q = torch::log(torch::stack(grown));
  return a + b + c + d + e + f + k + m + n + q;
}

// The softmax's probabilities through the same paths: log_softmax is the fix.
torch::Tensor attention_views(torch::Tensor scores, torch::Tensor target) {
  auto attn = torch::softmax(scores.to(torch::kHalf), -1);
  auto a = torch::log(attn.index({Slice(), -1}));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of torch::softmax probabilities (computed in fp16): a probability below 2.98e-8 is exactly 0 in fp16 and log(0) = -inf, whose gradient is NaN [mpnanny-log-softmax]
  auto b = attn.gather(-1, target).log();
// CHECK: :[[@LINE-1]]:36: warning: Tensor::log of torch::softmax probabilities (computed in fp16): a probability below 2.98e-8 is exactly 0 in fp16 and log(0) = -inf, whose gradient is NaN [mpnanny-log-softmax]
  auto c = torch::log(torch::cat({attn, attn.flip({0})}, 0));
// CHECK: :[[@LINE-1]]:12: warning: torch::log of torch::softmax probabilities (computed in fp16): a probability below 2.98e-8 is exactly 0 in fp16 and log(0) = -inf, whose gradient is NaN [mpnanny-log-softmax]
  auto d = torch::log_softmax(scores.to(torch::kHalf), -1).select(1, 0);
  return a + b + c + d;
}

// fp32 probabilities: nothing to report.
torch::Tensor fp32_views(torch::Tensor x) {
  auto g = torch::sigmoid(x);
  return torch::log(g.index({Slice(), 0})) + torch::log(torch::cat({g, 1 - g}, 1));
}
