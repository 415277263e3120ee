// Helpers of the integration scenarios (test_scenarios.cpp, test_lifecycle.cpp): how an alert
// is written in an assertion, a small model, a training loop under the nanny.
#ifndef MPNANNY_TEST_SCENARIO_SUPPORT_H
#define MPNANNY_TEST_SCENARIO_SUPPORT_H

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "mpnanny/Nanny.h"

namespace mpnanny::test {

/// "TYPE@file:line" for op alerts, "TYPE@parameter" for parameter alerts.
inline std::string describe(const Alert& alert) {
  std::string where = alert.name;
  if (where.empty()) {
    where = std::filesystem::path(alert.location.file).filename().string() + ":" + std::to_string(alert.location.line);
  }
  return std::string(to_string(alert.type)) + "@" + where;
}

inline std::set<std::string> distinct(const std::vector<Alert>& alerts) {
  std::set<std::string> result;
  for (const Alert& alert : alerts) result.insert(describe(alert));
  return result;
}

inline std::string listing(const std::vector<Alert>& alerts) {
  std::string text;
  for (const Alert& alert : alerts) {
    text += "  step " + std::to_string(alert.step) + " " + describe(alert) + " (" + alert.op + " " +
            to_string(alert.phase) + "): " + alert.message + "\n";
  }
  return text;
}

struct Mlp : torch::nn::Module {
  Mlp(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::nn::Linear fc1, fc2;
};

/// fc1 with weights `weight` everywhere, inputs 2: outputs 16 * 2 * weight.
struct OverflowNet : torch::nn::Module {
  explicit OverflowNet(double weight)
      : fc1(register_module("fc1", torch::nn::Linear(16, 32))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})))),
        fc2(register_module("fc2", torch::nn::Linear(32, 8))) {
    torch::NoGradGuard no_grad;
    fc1->weight.fill_(weight);
  }
  torch::nn::Linear fc1;
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc2;
};

/// Runs `steps` training steps under the nanny; `loss_of(step)` is the forward pass.
template <typename LossOf>
void train(Nanny& nanny, torch::nn::Module& model, int64_t steps, LossOf&& loss_of, double lr = 1e-3) {
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(lr));
  for (int64_t step = 0; step < steps; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    torch::Tensor loss = loss_of(step);
    loss.backward();
    optimizer.step();
    nanny.record_scalar("loss", loss.item<double>());
  }
}

/// Threads of this process named like the nanny's writer.
inline int writer_threads() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    count += name == "mpnanny-writer";
  }
  return count;
}

}  // namespace mpnanny::test

#endif  // MPNANNY_TEST_SCENARIO_SUPPORT_H
