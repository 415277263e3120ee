// A sampling head with a torch::nn::Softmax member, in a model converted to half: the
// module has no dtype option, so the input must be upcast before the top-p cumsum. The LogSoftmax member is fine in
// fp16: its kernel works in float and log-probabilities do not flush.
#include <torch/torch.h>

struct ClassifierImpl : torch::nn::Module {
  torch::nn::Linear fc{128, 10};
  torch::nn::Softmax softmax{torch::nn::SoftmaxOptions(1)};
  torch::nn::LogSoftmax log_softmax{torch::nn::LogSoftmaxOptions(1)};
  torch::Tensor forward(torch::Tensor x) {
    auto logits = fc(x);
    auto p = softmax(logits).to(torch::kFloat).cumsum(1); // expect: mpnanny-softmax-dtype
    auto lp = log_softmax(logits); // ok: mpnanny-softmax-dtype
    auto p_up = softmax(logits.to(torch::kFloat)).to(torch::kFloat).cumsum(1); // ok: mpnanny-softmax-dtype
    auto lp_up = log_softmax(logits.to(torch::kFloat)); // ok: mpnanny-softmax-dtype
    return p + lp + p_up + lp_up;
  }
};
TORCH_MODULE(Classifier);

struct Fp32ClassifierImpl : torch::nn::Module {
  torch::nn::Softmax softmax{torch::nn::SoftmaxOptions(1)};
  torch::Tensor forward(torch::Tensor x) {
    return softmax(x).to(torch::kFloat).cumsum(1); // ok: mpnanny-softmax-dtype
  }
};
TORCH_MODULE(Fp32Classifier);

void build() {
  Classifier half_model;
  half_model->to(torch::kHalf);
  Fp32Classifier fp32_model;
  fp32_model->to(torch::kCUDA);
}
