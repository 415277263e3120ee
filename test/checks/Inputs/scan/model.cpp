// Leading angle-bracket includes (what the header cache precompiles), a user header
// among them, then the user's code: two top-level declarations here, one in net.h.
#include <torch/torch.h>
#include <net.h>   // the user's own header, found through -I

struct Clamp {
  float low = 1e-9f;
};

torch::Tensor step(torch::Tensor x) {
  return x.to(torch::kHalf).clamp(1e-9, 1.0);
}
