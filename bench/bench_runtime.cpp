// Runtime benchmarks, measured side by side in one run and reported as medians of ratios (so a
// machine that is busy with something else slows both sides of each ratio alike):
//   1. the one-pass stat kernel versus the same statistics composed from ATen ops, and versus a
//      single at::sum over the same tensor;
//   2. a training step of the example attention model without the nanny, with the nanny at trace
//      interval 100, and in dense mode (every step traced), and with an empty RecordFunction
//      callback on every op of both passes: what LibTorch charges a plain op observer. The
//      nanny's callback is on for forward passes only, with the ops inside a watched op hidden
//      from it, so it pays less than that floor.
// Targets (issue 4): stat pass >= 4x faster than the composition and <= 1.5x one at::sum; step
// overhead <= 2 % at interval 100 and <= 25 % dense. This program prints; it asserts nothing.
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <vector>

#include "mpnanny/Nanny.h"
#include "mpnanny/TensorStats.h"

namespace {

double seconds_of(const std::function<void()>& work, int repeats) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// The statistics of compute_tensor_stats, from ATen ops (what a monitor without a kernel does).
double composed_stats(const torch::Tensor& tensor) {
  const auto x = tensor.to(torch::kFloat);
  const auto magnitude = x.abs();
  const auto finite = torch::isfinite(x);
  const auto nonzero = finite & (magnitude > 0);
  double checksum = 0;
  checksum += torch::isnan(x).sum().item<double>();
  checksum += torch::isinf(x).sum().item<double>();
  checksum += (x == 0).sum().item<double>();
  checksum += torch::where(finite, magnitude, torch::zeros_like(magnitude)).max().item<double>();
  checksum += torch::where(nonzero, magnitude, torch::full_like(magnitude, INFINITY)).min().item<double>();
  const auto finite_values = torch::where(finite, x, torch::zeros_like(x)).to(torch::kDouble);
  checksum += finite_values.sum().item<double>();
  checksum += finite_values.pow(2).sum().item<double>();
  for (const double limit : {65504.0, 3.3895313892515355e+38}) checksum += (finite & (magnitude > limit)).sum().item<double>();
  for (const auto& [normal, flush] : {std::pair{6.103515625e-05, 2.98023223876953125e-08},
                                      std::pair{1.1754943508222875e-38, 4.591774807899561e-41}}) {
    checksum += (nonzero & (magnitude < normal) & (magnitude > flush)).sum().item<double>();
    checksum += (nonzero & (magnitude <= flush)).sum().item<double>();
  }
  const auto exponents = torch::floor(torch::log2(magnitude.masked_select(nonzero))).clamp(-25, 16);
  checksum += torch::histc(exponents, 42, -25, 17).sum().item<double>();
  return checksum;
}

void bench_stat_kernel() {
  std::printf("stat pass, %s copy, %d thread(s) (median of ratios over rounds; lower is better for the kernel)\n",
              mpnanny::stat_kernel_copy(), at::get_num_threads());
  std::printf("%-24s %14s %14s %14s %12s %12s\n", "tensor", "kernel_us", "aten_compose_us", "at_sum_us",
              "compose/kern", "kern/at_sum");
  torch::manual_seed(0);
  struct Case {
    const char* name;
    torch::Tensor tensor;
  };
  const std::vector<Case> cases = {
      {"float 16M (past L3)", torch::randn({1 << 24})},
      {"float 4M", torch::randn({1 << 22})},
      {"float 6K (example's size)", torch::randn({16 * 12 * 32})},
      {"float 256K", torch::randn({1 << 18})},
      {"float 256K uniform", torch::rand({1 << 18}) * 2 - 1},  // weights as initialized
      {"float 1M after ReLU", torch::relu(torch::randn({1 << 20}))},  // half zeros, in every block
      {"float 1024x1024 t()", torch::randn({1024, 1024}).t()},
      {"bfloat16 4M", torch::randn({1 << 22}).to(torch::kBFloat16)},
      {"half 4M", torch::randn({1 << 22}).to(torch::kHalf)},
  };
  for (const Case& c : cases) {
    volatile double sink = 0;
    const std::function<void()> kernel_pass = [&] { sink = sink + mpnanny::compute_tensor_stats(c.tensor).sum; };
    const std::function<void()> sum_pass = [&] { sink = sink + c.tensor.sum().item<double>(); };
    // Each timing repeats its pass for about 2 ms (at least 3 times), after one untimed pass
    // that warms the cache for it.
    const int repeats = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 21) / c.tensor.numel(), 3, 1000));
    const auto warm_seconds_of = [&](const std::function<void()>& work) {
      work();
      return seconds_of(work, repeats);
    };
    // Kernel against at::sum: rounds of their own, taking turns going first. The composition
    // runs apart from them: its gigabytes of temporaries evict the tensor and fault pages in,
    // which read up to a fifth higher on both sides when the three were interleaved.
    std::vector<double> sum_ratio, kernel_times, sum_times;
    for (int round = 0; round < 15; ++round) {
      double kernel = 0, sum = 0;
      if (round % 2 == 0) {
        kernel = warm_seconds_of(kernel_pass);
        sum = warm_seconds_of(sum_pass);
      } else {
        sum = warm_seconds_of(sum_pass);
        kernel = warm_seconds_of(kernel_pass);
      }
      kernel_times.push_back(kernel);
      sum_times.push_back(sum);
      sum_ratio.push_back(kernel / sum);
    }
    // Composition against the kernel, each round's kernel timed right after its composition.
    std::vector<double> compose_ratio, compose_times;
    for (int round = 0; round < 5; ++round) {
      const double compose = seconds_of([&] { sink = sink + composed_stats(c.tensor); }, 2);
      compose_times.push_back(compose);
      compose_ratio.push_back(compose / warm_seconds_of(kernel_pass));
    }
    std::printf("%-24s %14.1f %14.1f %14.1f %12.2f %12.2f\n", c.name, 1e6 * median(kernel_times),
                1e6 * median(compose_times), 1e6 * median(sum_times), median(compose_ratio), median(sum_ratio));
  }
}

/// The example's attention classifier (examples/train_attention.cpp), same shapes.
struct Attention : torch::nn::Module {
  Attention()
      : embed(register_module("embed", torch::nn::Embedding(64, 32))),
        qkv(register_module("qkv", torch::nn::Linear(32, 96))),
        proj(register_module("proj", torch::nn::Linear(32, 32))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})))),
        head(register_module("head", torch::nn::Linear(32, 4))) {}
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& padding) {
    const int64_t batch = tokens.size(0), seq = tokens.size(1);
    auto x = embed(tokens);
    auto parts = qkv(x).chunk(3, -1);
    auto split = [&](const torch::Tensor& t) { return t.view({batch, seq, 4, 8}).transpose(1, 2); };
    auto scores = torch::matmul(split(parts[0]), split(parts[1]).transpose(-2, -1)) / std::sqrt(8.0);
    scores = scores.masked_fill(padding.unsqueeze(1).unsqueeze(2), -1e4);
    auto attention = torch::softmax(scores, -1);
    auto context = torch::matmul(attention, split(parts[2])).transpose(1, 2).reshape({batch, seq, 32});
    auto h = norm(x + proj(context));
    auto keep = (~padding).unsqueeze(-1).to(h.scalar_type());
    return head((h * keep).sum(1) / keep.sum(1).clamp_min(1.0));
  }
  torch::nn::Embedding embed;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};

void bench_training_step() {
  std::printf("\ntraining step of the example model (median over blocks of the ratio to the plain block next to it)\n");
  torch::manual_seed(1);
  auto model = std::make_shared<Attention>();
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  const auto tokens = torch::randint(64, {16, 12});
  const auto padding = torch::arange(12).unsqueeze(0) >= torch::randint(6, 13, {16, 1});
  const auto labels = std::get<0>(tokens.remainder(4).mode(1));
  const auto directory = std::filesystem::temp_directory_path() / "mpnanny-bench";
  std::filesystem::remove_all(directory);

  const auto one_step = [&] {
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(tokens, padding), labels);
    loss.backward();
    optimizer.step();
  };
  mpnanny::Options sparse_options;
  sparse_options.trace_interval = 100;
  sparse_options.output_dir = (directory / "sparse").string();
  sparse_options.verbosity = 0;
  mpnanny::Options dense_options = sparse_options;
  dense_options.trace_interval = 1;
  dense_options.output_dir = (directory / "dense").string();

  // Each variant runs in blocks of kBlockSteps steps, alternating with plain blocks while its
  // Nanny stays alive (one Nanny observes ops at a time), so that a machine whose speed drifts
  // (this one wanders by +-20 % over seconds) slows a block and the plain block beside it alike.
  // Steady state: the Nanny is built and has traced its step 0 (symbolization caches filled)
  // before the first timed block; construction is reported separately.
  constexpr int kBlocks = 30, kBlockSteps = 20;
  for (int i = 0; i < 20; ++i) one_step();  // warm-up: thread pools, allocator
  std::vector<double> plain_times, setup_times;
  const auto ratios_with = [&](const mpnanny::Options& options) {
    const auto setup_start = std::chrono::steady_clock::now();
    mpnanny::Nanny nanny(model, options);
    setup_times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count());
    int64_t step = 0;
    const auto step_with = [&] {
      auto guard = nanny.step(step++);
      one_step();
    };
    step_with();
    std::vector<double> ratios;
    for (int block = 0; block < kBlocks; ++block) {
      const double plain = seconds_of(one_step, kBlockSteps);
      ratios.push_back(seconds_of(step_with, kBlockSteps) / plain);
      plain_times.push_back(plain);
    }
    nanny.close();
    return ratios;
  };
  const std::vector<double> sparse_ratio = ratios_with(sparse_options);
  const std::vector<double> dense_ratio = ratios_with(dense_options);
  // What a plain op observer pays in this LibTorch before doing anything: a global
  // RecordFunction callback that returns at once, on every op of both passes.
  const auto ratios_with_empty_callback = [&](bool with_inputs) {
    const at::CallbackHandle handle = at::addGlobalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> { return nullptr; })
            .needsInputs(with_inputs)
            .needsOutputs(true)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
    at::disableCallback(handle);
    std::vector<double> ratios;
    for (int block = 0; block < kBlocks; ++block) {
      const double plain = seconds_of(one_step, kBlockSteps);
      at::reenableCallback(handle);
      ratios.push_back(seconds_of(one_step, kBlockSteps) / plain);
      at::disableCallback(handle);
    }
    at::removeCallback(handle);
    return ratios;
  };
  const std::vector<double> empty_with_inputs = ratios_with_empty_callback(true);
  const std::vector<double> empty_without_inputs = ratios_with_empty_callback(false);
  std::printf("%-28s %10.3f ms\n", "step without the nanny", 1e3 * median(plain_times));
  std::printf("%-28s %+9.1f %%   (target <= 2 %%)\n", "overhead, trace interval 100", 100 * (median(sparse_ratio) - 1));
  std::printf("%-28s %+9.1f %%   (target <= 25 %%)\n", "overhead, dense (every step)", 100 * (median(dense_ratio) - 1));
  std::printf("%-28s %10.3f ms   (once per run, not per step)\n", "Nanny construction", 1e3 * median(setup_times));
  std::printf("LibTorch's floor for a plain op observer (every op, both passes), every step:\n");
  std::printf("%-28s %+9.1f %%\n", "  empty callback with inputs", 100 * (median(empty_with_inputs) - 1));
  std::printf("%-28s %+9.1f %%\n", "  empty callback, no inputs", 100 * (median(empty_without_inputs) - 1));
  std::filesystem::remove_all(directory);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  if (only.empty() || only == "stats") bench_stat_kernel();
  if (only.empty() || only == "step") bench_training_step();
  return 0;
}
