// Data-parallel training the way LibTorch C++ does it: N processes, each with a copy of the model,
// gradients all-reduced by hand with c10d's Gloo backend, and an mpnanny::Nanny on every rank that
// knows the process group (docs/data-parallel.md).
//
//   train_ddp --world-size 4                       # launches 4 ranks on this machine (FileStore)
//   train_ddp --rank 1 --world-size 4 --store F    # one rank, as a launcher would start it
//   MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 RANK=1 WORLD_SIZE=4 train_ddp   # multi-node (TCPStore)
//
// Options: --steps S (default 60), --trace-interval K (100), --nanny-dir DIR (nanny_ddp),
// --no-nanny (the nanny switched off, for the benchmark), --no-group (nanny without the process
// group), --pause-blocks B (the benchmark's paired blocks: after a first block of B steps, blocks
// of B steps with the nanny on and paused alternate, on off off on, each block's time printed),
// and two demonstrations of what the nanny finds: --poison-rank R --poison-step K makes rank R's
// batch huge at step K (its activations overflow to Inf, the all-reduce spreads it), and
// --exit-rank R --exit-step K kills rank R at step K (SIGKILL: its nanny never closes).
#include <mpnanny/Nanny.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include "gloo_group.h"

#include <time.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct RegressorImpl : torch::nn::Module {
  RegressorImpl(int64_t inputs, int64_t hidden)
      : fc1(register_module("fc1", torch::nn::Linear(inputs, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        head(register_module("head", torch::nn::Linear(hidden, 1))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::gelu(fc1(x));
    x = torch::gelu(fc2(x));
    return head(x);
  }

  torch::nn::Linear fc1, fc2, head;
};
TORCH_MODULE(Regressor);

struct Arguments {
  std::optional<int> rank;
  int world_size = 2;
  std::string store;  // a FileStore path; empty: MASTER_ADDR/MASTER_PORT (TCPStore) or a temporary file
  int64_t steps = 60;
  int64_t trace_interval = 100;
  std::string nanny_dir = "nanny_ddp";
  bool nanny = true;
  bool group_to_nanny = true;
  int poison_rank = -1;
  int64_t poison_step = -1;
  int exit_rank = -1;
  int64_t exit_step = -1;
  int64_t pause_blocks = 0;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "train_ddp: " << why
            << "\nusage: train_ddp [--rank R] [--world-size N] [--store FILE] [--steps S] [--trace-interval K]"
               " [--nanny-dir DIR] [--no-nanny] [--no-group] [--pause-blocks B] [--poison-rank R --poison-step K]"
               " [--exit-rank R --exit-step K]\n";
  std::exit(2);
}

int64_t integer_argument(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0') usage(flag + " needs a whole number, not '" + text + "'");
  return value;
}

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  if (const char* rank = std::getenv("RANK")) arguments.rank = static_cast<int>(integer_argument("RANK", rank));
  if (const char* size = std::getenv("WORLD_SIZE")) {
    arguments.world_size = static_cast<int>(integer_argument("WORLD_SIZE", size));
  }
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--rank") arguments.rank = static_cast<int>(integer_argument(flag, value()));
    else if (flag == "--world-size") arguments.world_size = static_cast<int>(integer_argument(flag, value()));
    else if (flag == "--store") arguments.store = value();
    else if (flag == "--steps") arguments.steps = integer_argument(flag, value());
    else if (flag == "--trace-interval") arguments.trace_interval = integer_argument(flag, value());
    else if (flag == "--nanny-dir") arguments.nanny_dir = value();
    else if (flag == "--no-nanny") arguments.nanny = false;
    else if (flag == "--no-group") arguments.group_to_nanny = false;
    else if (flag == "--poison-rank") arguments.poison_rank = static_cast<int>(integer_argument(flag, value()));
    else if (flag == "--poison-step") arguments.poison_step = integer_argument(flag, value());
    else if (flag == "--exit-rank") arguments.exit_rank = static_cast<int>(integer_argument(flag, value()));
    else if (flag == "--exit-step") arguments.exit_step = integer_argument(flag, value());
    else if (flag == "--pause-blocks") arguments.pause_blocks = integer_argument(flag, value());
    else usage("unknown argument " + flag);
  }
  if (arguments.world_size < 1) usage("--world-size must be at least 1");
  if (arguments.pause_blocks < 0) usage("--pause-blocks must not be negative");
  if (arguments.rank && (*arguments.rank < 0 || *arguments.rank >= arguments.world_size)) {
    usage("the rank must lie in [0, world size)");
  }
  return arguments;
}

/// Without --rank: start one process per rank on this machine (the same program, with --rank and
/// a FileStore), wait for all, and fail if any failed.
int launch_ranks(int argc, char** argv, Arguments arguments) {
  if (arguments.store.empty()) {
    arguments.store = "/tmp/train_ddp_store." + std::to_string(getpid());
  }
  std::remove(arguments.store.c_str());  // a FileStore left by an earlier run would hold its keys
  std::vector<pid_t> children;
  for (int rank = 0; rank < arguments.world_size; ++rank) {
    std::vector<std::string> words(argv, argv + argc);
    for (const std::string& extra :
         {std::string("--rank"), std::to_string(rank), std::string("--world-size"),
          std::to_string(arguments.world_size), std::string("--store"), arguments.store}) {
      words.push_back(extra);
    }
    std::vector<char*> child_argv;
    for (std::string& word : words) child_argv.push_back(word.data());
    child_argv.push_back(nullptr);
    pid_t child = 0;
    if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, child_argv.data(), environ) != 0) {
      std::cerr << "train_ddp: cannot start rank " << rank << "\n";
      return 1;
    }
    children.push_back(child);
  }
  int failed = 0;
  for (size_t rank = 0; rank < children.size(); ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
      std::cerr << "train_ddp: rank " << rank << " "
                << (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                        : "exited with " + std::to_string(WEXITSTATUS(status)))
                << "\n";
    }
  }
  std::remove(arguments.store.c_str());
  std::cout << "nanny databases: " << arguments.nanny_dir << "/metrics-rank*.db  (mpnanny summary --db "
            << arguments.nanny_dir << ")\n";
  return failed ? 1 : 0;
}

c10::intrusive_ptr<c10d::Store> make_store(const Arguments& arguments, int rank) {
  const char* master = std::getenv("MASTER_ADDR");
  if (arguments.store.empty() && master) {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(integer_argument("MASTER_PORT", std::getenv("MASTER_PORT") ? std::getenv("MASTER_PORT") : "29500"));
    options.isServer = rank == 0;
    options.numWorkers = arguments.world_size;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    // LibTorch 2.4 made the libuv store the default, and refuses it where it was built without
    // libuv (Debian's 2.6); the classic store works in every build.
    options.useLibUV = false;
#endif
    return c10::make_intrusive<c10d::TCPStore>(master, options);
  }
  if (arguments.store.empty()) usage("a rank needs --store FILE or MASTER_ADDR/MASTER_PORT");
  return c10::make_intrusive<c10d::FileStore>(arguments.store, arguments.world_size);
}

/// The gradients of every rank, averaged: what DistributedDataParallel does in Python.
void all_reduce_gradients(torch::nn::Module& model, c10d::ProcessGroup& group) {
  for (auto& parameter : model.parameters()) {
    if (!parameter.grad().defined()) continue;
    std::vector<torch::Tensor> gradient = {parameter.grad()};
    group.allreduce(gradient)->wait();
    parameter.grad().div_(group.getSize());
  }
}

/// --pause-blocks: the nanny on and paused in alternate blocks of steps of the same processes, so
/// that the machine's drift, which makes whole runs differ by more than the nanny costs, hits both
/// alike. Block 0 warms up (the database, the first symbolization) and is not timed; then the order
/// on, off, off, on repeats, so that each pair of neighbours holds one of each, in both orders.
class PausedBlocks {
 public:
  PausedBlocks(int64_t block_steps, int rank) : block_steps_(block_steps), rank_(rank) {}

  /// Before `step` begins: ends the block that finished there and starts the next one.
  void before_step(int64_t step, mpnanny::Nanny& nanny) {
    if (block_steps_ <= 0 || step % block_steps_ != 0 || step == 0) return;
    finish_block(step / block_steps_ - 1);
    const int64_t measured = step / block_steps_ - 1;  // the index of the block that starts here
    if (nanny_on(measured)) {
      nanny.resume();
    } else {
      nanny.pause();
    }
    started_ = std::chrono::steady_clock::now();
    cpu_started_ = process_cpu_ms();
  }

  /// After the last step: ends the block in progress if it is whole.
  void after_last_step(int64_t steps) {
    if (block_steps_ <= 0 || steps % block_steps_ != 0 || steps < 2 * block_steps_) return;
    finish_block(steps / block_steps_ - 1);
  }

 private:
  static bool nanny_on(int64_t measured) { return measured % 4 == 0 || measured % 4 == 3; }

  /// The CPU time of every thread of this process (the nanny's writer included): the work a block
  /// did, which the machine's other load changes less than the block's wall-clock time.
  static double process_cpu_ms() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return 1e3 * static_cast<double>(now.tv_sec) + 1e-6 * static_cast<double>(now.tv_nsec);
  }

  void finish_block(int64_t block) {
    if (block == 0) return;  // the warm-up
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    std::cout << "rank " << rank_ << ": block " << block - 1 << " nanny " << (nanny_on(block - 1) ? "on" : "off")
              << " " << ms << " ms cpu " << process_cpu_ms() - cpu_started_ << " ms\n";
  }

  int64_t block_steps_;
  int rank_;
  std::chrono::steady_clock::time_point started_;
  double cpu_started_ = 0;
};

int train_rank(const Arguments& arguments) {
  const int rank = *arguments.rank;
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  if (const char* master = std::getenv("MASTER_ADDR")) {
    options->devices.back() = c10d::ProcessGroupGloo::createDeviceForHostname(master);
  }
  const auto group = gloo_group(make_store(arguments, rank), rank, arguments.world_size, options);

  torch::manual_seed(0);  // the same initial weights on every rank
  Regressor model(32, 64);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05));

  mpnanny::Options nanny_options;
  nanny_options.trace_interval = arguments.trace_interval;
  nanny_options.output_dir = arguments.nanny_dir;
  nanny_options.enabled = arguments.nanny;
  nanny_options.verbosity = 0;
  if (arguments.group_to_nanny) nanny_options.process_group = group;
  mpnanny::Nanny nanny(model, nanny_options);

  torch::manual_seed(1000 + rank);  // each rank its own shard of the data
  const torch::Tensor direction = torch::ones({32, 1}) / 32.0;
  PausedBlocks blocks(arguments.pause_blocks, rank);
  const auto started = std::chrono::steady_clock::now();
  auto after_first_step = started;
  try {
    for (int64_t step = 0; step < arguments.steps; ++step) {
      if (step == 1) after_first_step = std::chrono::steady_clock::now();
      blocks.before_step(step, nanny);
      auto guard = nanny.step(step);
      if (rank == arguments.exit_rank && step == arguments.exit_step) std::raise(SIGKILL);
      optimizer.zero_grad();
      torch::Tensor x = torch::randn({64, 32});
      const torch::Tensor y = torch::matmul(x, direction);
      if (rank == arguments.poison_rank && step == arguments.poison_step) x = x * 1e20;
      const torch::Tensor loss = torch::mse_loss(model->forward(x), y);
      loss.backward();
      all_reduce_gradients(*model, *group);
      optimizer.step();
      nanny.record_scalar("loss", loss.item<double>());
    }
  } catch (const std::exception& error) {
    // A rank that died breaks every collective after it: c10d throws, as here.
    std::cerr << "train_ddp: rank " << rank << ": " << error.what() << "\n";
    return 3;
  }
  // The training loop alone, without start-up and rendezvous, and without its first step (which
  // holds one-time costs: the nanny's database and the first symbolization of source lines): what
  // bench/ddp-bench.py compares.
  const auto finished = std::chrono::steady_clock::now();
  blocks.after_last_step(arguments.steps);
  const auto ms = [](auto duration) { return std::chrono::duration<double, std::milli>(duration).count(); };
  std::cout << "rank " << rank << ": " << arguments.steps << " steps in " << ms(finished - started) << " ms, "
            << "after the first step " << ms(finished - after_first_step) << " ms\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Arguments arguments = parse(argc, argv);
  if (!arguments.rank) return launch_ranks(argc, argv, arguments);
  return train_rank(arguments);
}
