// PPO / policy-gradient log-probabilities from a policy converted to fp16. log_softmax in
// fp16 is not a hazard: the kernel (SoftMax.cu, LogSoftMaxForwardEpilogue) computes
// x - max - log(sum(exp(x - max))) in float and only rounds the result, and a log-probability
// never flushes (fp16 holds down to -65504); a value near -20 is off by up to 0.008.
#include <torch/torch.h>

namespace F = torch::nn::functional;

torch::Tensor policy_log_probs(torch::Tensor obs_features, torch::Tensor actions) {
  auto logits = obs_features.to(torch::kHalf);
  auto logp = logits.log_softmax(-1); // ok: mpnanny-softmax-dtype
  auto logp2 = F::log_softmax(logits, F::LogSoftmaxFuncOptions(-1)); // ok: mpnanny-softmax-dtype
  auto logp32 = logits.log_softmax(-1, torch::kFloat); // ok: mpnanny-softmax-dtype
  auto logp_fn = torch::log_softmax(logits.to(torch::kFloat), -1); // ok: mpnanny-softmax-dtype
  auto logp_opt = F::log_softmax(logits, F::LogSoftmaxFuncOptions(-1).dtype(torch::kFloat)); // ok: mpnanny-softmax-dtype
  return logp + logp2 + logp32 + logp_fn + logp_opt;
}

torch::Tensor bf16_log_probs(torch::Tensor features) {
  auto logits = features.to(torch::kBFloat16);
  return torch::log_softmax(logits, -1); // ok: mpnanny-softmax-dtype
}
