// A C++20 translation unit on LibTorch's real headers: concepts, designated initializers,
// std::span, ranges and a defaulted <=>, around the same -1e9 mask fill.
#include <torch/torch.h>

#include <compare>
#include <concepts>
#include <ranges>
#include <span>
#include <vector>

template <typename T>
concept TensorLike = requires(T t) { t.masked_fill(t, 0.0); };

struct Shape {
  int64_t batch = 0, seq = 0;
  auto operator<=>(const Shape &) const = default;
};

template <TensorLike T>
T mask_scores(T scores, T mask) {
  return scores.masked_fill(mask, -1e9);
}

torch::Tensor attention(std::span<const torch::Tensor> qkv, torch::Tensor mask) {
  const Shape shape{.batch = qkv[0].size(0), .seq = qkv[0].size(1)};
  auto scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)).to(torch::kHalf);
  auto masked = mask_scores(scores, mask);
  auto scaled = masked.masked_fill(mask, -1e9);
  std::vector<int64_t> dims;
  for (int64_t d : std::views::iota(int64_t{0}, shape.seq) | std::views::take(2))
    dims.push_back(d);
  // A top-p cut: the fp16 probabilities are summed up (softmax-dtype warns only where they are).
  auto probs = torch::softmax(scaled, -1);
  return probs.cumsum(-1);
}
