// Templates that produce the risky calls: a function template instantiated twice, a class
// template's member, a generic lambda, a variadic fold and CRTP. No crash, and each finding is
// reported once, in the template's text.
#include <torch/torch.h>

template <typename T> torch::Tensor log_probs(torch::Tensor x, T dim) {
  auto h = x.to(torch::kHalf);
  return torch::log(torch::softmax(h, dim)); // HOSTILE-FINDING
}

template <int Dim> struct Head {
  torch::Tensor forward(torch::Tensor x) {
    auto h = x.to(torch::kHalf);
    return torch::log(torch::softmax(h, Dim)); // HOSTILE-FINDING
  }
};

template <typename Derived> struct Base {
  torch::Tensor run(torch::Tensor x) { return static_cast<Derived *>(this)->impl(x); }
};
struct Impl : Base<Impl> {
  torch::Tensor impl(torch::Tensor x) {
    auto h = x.to(torch::kHalf);
    return torch::log(torch::softmax(h, 1)); // HOSTILE-FINDING
  }
};

template <typename... Ts> torch::Tensor sum_all(Ts... xs) { return (xs + ...); }

torch::Tensor use(torch::Tensor x) {
  auto generic = [](auto t) {
    auto h = t.to(torch::kHalf);
    return torch::log(torch::softmax(h, 1)); // HOSTILE-FINDING
  };
  Head<1> head;
  Head<2> other;
  Impl impl;
  return log_probs(x, 1) + log_probs(x, int64_t{1}) + head.forward(x) + other.forward(x) +
         impl.run(x) + generic(x) + sum_all(x, x, x);
}
