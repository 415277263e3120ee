// Macros that produce the risky calls: every finding is reported at the user's line (where the
// macro is used, or where the argument is written), never inside a macro definition.
#include <torch/torch.h>

#define LOG_OF(x) torch::log(x)                                   // MACRO-DEFINITION
#define HALF_PROBS(x) torch::softmax((x).to(torch::kHalf), 1)     // MACRO-DEFINITION
#define APPLY(f, x) f(x)                                          // MACRO-DEFINITION
#define LOG_PROBS(x) LOG_OF(HALF_PROBS(x))                        // MACRO-DEFINITION
#define DEFINE_HEAD(name)                                         /* MACRO-DEFINITION */ \
  torch::Tensor name(torch::Tensor x) {                           /* MACRO-DEFINITION */ \
    return torch::log(torch::softmax(x.to(torch::kHalf), 1));     /* MACRO-DEFINITION */ \
  }

torch::Tensor argument_in_macro(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return LOG_OF(torch::softmax(h, 1)); // HOSTILE-FINDING
}

torch::Tensor body_in_macro(torch::Tensor x) {
  return torch::log(HALF_PROBS(x)); // HOSTILE-FINDING
}

torch::Tensor function_as_argument(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return APPLY(torch::log, torch::softmax(h, 1)); // HOSTILE-FINDING
}

torch::Tensor nested_macros(torch::Tensor x) {
  return LOG_PROBS(x); // HOSTILE-FINDING
}

DEFINE_HEAD(generated_head) // HOSTILE-FINDING
