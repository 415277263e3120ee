// The training process the storage tests (test_storage.cpp) kill, starve of disk or point at a
// read-only directory. It trains a small MLP under the nanny with every step traced, so that
// the writer is busy all the time, and reports on stdout, one line each, what the test checks:
//
//   committed <step>    after nanny.flush(): every record of steps 0..<step> is in the database
//   done <steps> active=<0|1>
//                       training finished all its steps; active=0: the nanny switched itself off
//
// Usage: mpnanny_storage_child <output_dir> <steps> <flush_every> [<file_size_limit_bytes>]
// A file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so that write() fails with EFBIG instead
// of killing the process) stands in for a full disk where no small file system can be mounted.
#include <sys/resource.h>
#include <torch/torch.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mpnanny/Nanny.h"

namespace {

struct DeepMlp : torch::nn::Module {
  explicit DeepMlp(int layers) {
    for (int i = 0; i < layers; ++i) {
      stack->push_back(torch::nn::Linear(32, 32));
      if (i + 1 < layers) stack->push_back(torch::nn::ReLU());
    }
    register_module("stack", stack);
  }
  torch::nn::Sequential stack;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <output_dir> <steps> <flush_every> [<file_size_limit_bytes>]\n", argv[0]);
    return 2;
  }
  const std::string output_dir = argv[1];
  const long steps = std::atol(argv[2]);
  const long flush_every = std::atol(argv[3]);
  if (argc > 4) {
    const rlim_t limit = std::strtoull(argv[4], nullptr, 10);
    const rlimit fsize{limit, limit};
    std::signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &fsize) != 0) {
      std::perror("setrlimit(RLIMIT_FSIZE)");
      return 2;
    }
  }
  // One intra-op thread: the tests run next to others on a small machine, and this process only
  // has to keep the writer busy, not train fast.
  torch::set_num_threads(1);
  torch::manual_seed(0);
  auto model = std::make_shared<DeepMlp>(8);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(1e-3));
  const torch::Tensor x = torch::randn({16, 32}), y = torch::randn({16, 32});

  mpnanny::Options options;
  options.output_dir = output_dir;
  options.trace_interval = 1;
  options.verbosity = 0;
  mpnanny::Nanny nanny(model, options);
  for (long step = 0; step < steps; ++step) {
    {
      auto guard = nanny.step(step);
      optimizer.zero_grad();
      auto loss = torch::mse_loss(model->stack->forward(x), y);
      loss.backward();
      optimizer.step();
      nanny.record_scalar("loss", loss.item<double>());
    }
    if ((step + 1) % flush_every == 0) {
      nanny.flush();
      if (nanny.active()) {
        std::printf("committed %ld\n", step);
        std::fflush(stdout);
      }
    }
  }
  const bool stayed_on = nanny.active();  // close() switches it off in any case
  nanny.close();
  std::printf("done %ld active=%d\n", steps, stayed_on ? 1 : 0);
  std::fflush(stdout);
  return 0;
}
