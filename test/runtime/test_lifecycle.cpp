// The nanny's life around a training: the environment it reads, a forked child, steps and
// backward passes on other threads, watch() without a step loop, an unwritable directory, and
// where an op's source line is attributed. Scenarios of alerts are in test_scenarios.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "../../runtime/src/SourceLocator.h"
#include "ScenarioSupport.h"
#include "TestSupport.h"
#include "TracedEveryStep.h"
#include "Vocabulary.h"
#include "attribution/Attribution.h"
#include "mpnanny/GradScaler.h"
#include "mpnanny/Nanny.h"

namespace mpnanny {
namespace {

// The helpers: ScenarioSupport.h, TestSupport.h, TracedEveryStep.h.
using namespace test;

constexpr const char* kThisFile = "test_lifecycle.cpp";

std::string at_line(int line) { return std::string(kThisFile) + ":" + std::to_string(line); }

TEST(Nanny, DisabledByTheEnvironment) {
  ScratchDir dir;
  setenv("MPNANNY_DISABLE", "1", 1);
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Nanny nanny(net, traced_every_step(dir));
  unsetenv("MPNANNY_DISABLE");
  EXPECT_FALSE(nanny.active());
  { auto guard = nanny.step(0); }
  nanny.close();
  EXPECT_FALSE(std::filesystem::exists(dir.file("metrics.db")));
}

TEST(Nanny, EnvironmentOverridesDirectoryIntervalAndRankFile) {
  ScratchDir dir;
  setenv("MPNANNY_DIR", (dir.path() + "/from-env").c_str(), 1);
  setenv("MPNANNY_TRACE_INTERVAL", "3", 1);
  setenv("RANK", "2", 1);
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Options options;
  options.verbosity = 0;
  Nanny nanny(net, options);
  unsetenv("MPNANNY_DIR");
  unsetenv("MPNANNY_TRACE_INTERVAL");
  unsetenv("RANK");
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 7, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.close();
  EXPECT_EQ(nanny.options().trace_interval, 3);
  EXPECT_EQ(nanny.database_path(), dir.path() + "/from-env/metrics-rank2.db");
  EXPECT_EQ(query(nanny.database_path(), "SELECT step FROM steps WHERE traced=1 ORDER BY step"),
            (test::Rows{{"0"}, {"3"}, {"6"}}));
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT rank FROM runs"), "2");
  EXPECT_NE(query_value(nanny.database_path(), "SELECT options_json FROM runs").find("\"trace_interval\":3"),
            std::string::npos);
}

// Values that are not what a variable means are ignored with a warning: read with atoi, RANK=abc
// wrote into rank 0's file, MPNANNY_DISABLE=no switched monitoring off, and an interval past int64
// was clamped without a word.
TEST(Nanny, EnvironmentValuesThatMeanNothingAreIgnoredWithAWarning) {
  ScratchDir dir;
  setenv("MPNANNY_DISABLE", "No", 1);
  setenv("MPNANNY_TRACE_INTERVAL", "99999999999999999999", 1);
  setenv("RANK", "abc", 1);
  setenv("WORLD_SIZE", "0", 1);
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Options options = traced_every_step(dir);
  options.trace_interval = 2;
  testing::internal::CaptureStderr();
  Nanny nanny(net, options);
  const std::string warnings = testing::internal::GetCapturedStderr();
  for (const char* name : {"MPNANNY_DISABLE", "MPNANNY_TRACE_INTERVAL", "RANK", "WORLD_SIZE"}) unsetenv(name);
  EXPECT_TRUE(nanny.active());
  EXPECT_EQ(nanny.options().trace_interval, 2);
  EXPECT_EQ(nanny.database_path(), dir.file("metrics.db"));
  EXPECT_NE(warnings.find("ignoring MPNANNY_TRACE_INTERVAL='99999999999999999999' (expected an integer from 0 up)"),
            std::string::npos) << warnings;
  EXPECT_NE(warnings.find("ignoring RANK='abc'"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("ignoring WORLD_SIZE='0' (expected an integer from 1 to 2147483647)"), std::string::npos)
      << warnings;
  EXPECT_EQ(warnings.find("MPNANNY_DISABLE"), std::string::npos) << "'No' is a value it knows: " << warnings;

  setenv("MPNANNY_DISABLE", "maybe", 1);
  testing::internal::CaptureStderr();
  Nanny unsure(net, traced_every_step(dir));
  const std::string unsure_warnings = testing::internal::GetCapturedStderr();
  setenv("MPNANNY_DISABLE", "ON", 1);
  Nanny disabled(net, traced_every_step(dir));
  unsetenv("MPNANNY_DISABLE");
  EXPECT_NE(unsure_warnings.find("ignoring MPNANNY_DISABLE='maybe'"), std::string::npos) << unsure_warnings;
  EXPECT_FALSE(disabled.active());
}

// A data loader's workers run ops on their own threads while the training loop runs a step:
// normalizing the next batches is not the model's forward pass, and was recorded as it, under
// whatever step was current and with no line of the model.
TEST(Scenario, OpsOnAnotherThreadDuringAStepAreNotTheSteps) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 8, 4);
  const torch::Tensor x = torch::randn({2, 4});
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 3, [&](int64_t) {
    std::thread worker([] { (void)torch::exp(torch::full({64}, 20.0)); });  // 4.9e8: fp16 OVERFLOW
    worker.join();
    return torch::softmax(net->fc2(net->fc1(x)), 1).pow(2).mean();
  });
  nanny.close();
  EXPECT_TRUE(nanny.alerts().empty()) << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::exp'"), "0");
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::softmax' AND phase = 'forward'"), "3");
}

// A program that forks after its Nanny started: the child neither hangs at exit (destroying the
// writer waited forever on the parent's writer thread's condition variable) nor loses what it
// trains to a queue no thread reads; a Nanny it makes watches it, and the parent's run goes on.
// LibTorch 2.x refuses a backward pass in a child forked after the parent ran one ("Unable to
// handle autograd's threading in combination with fork-based multiprocessing": its autograd
// engine marks such children at fork), so there the child runs its steps forward only; the
// runtime's part (writer thread, queue, a second Nanny) is the same.
TEST(Nanny, AForkedChildExitsAndItsOwnNannyWatchesIt) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 8, 4);
  const torch::Tensor x = torch::randn({2, 4});
  const auto loss_of = [&](int64_t) { return torch::softmax(net->fc2(net->fc1(x)), 1).pow(2).mean(); };
  constexpr bool kChildMayRunBackward = TORCH_VERSION_MAJOR < 2;
  const auto child_trains = [&](Nanny& watching, int64_t steps) {
    if (kChildMayRunBackward) {
      train(watching, *net, steps, loss_of);
      return;
    }
    for (int64_t step = 0; step < steps; ++step) {
      auto guard = watching.step(step);
      watching.record_scalar("loss", loss_of(step).item<double>());
    }
  };
  if (!kChildMayRunBackward) {
    std::printf(
        "[   NOTE   ] LibTorch %d.%d: the forked child trains forward only (LibTorch 2.x refuses autograd "
        "in a child forked after a backward pass)\n",
        TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
  }
  Options options = traced_every_step(dir);
  options.output_dir = dir.file("parent");
  Nanny nanny(net, options);
  train(nanny, *net, 3, loss_of);
  std::fflush(nullptr);
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // One thread, as PyTorch's data-loader workers set: the parent's OpenMP pool did not survive
    // the fork, and LibTorch 2.6's softmax waits in GOMP_parallel for its threads forever.
    at::set_num_threads(1);
    // Exit codes tell the parent what went wrong.
    child_trains(nanny, 3);  // the inherited Nanny: off, quietly
    nanny.flush();
    nanny.close();
    if (nanny.active()) _exit(3);
    Options own = traced_every_step(dir);
    own.output_dir = dir.file("child");
    Nanny child_nanny(net, own);
    child_trains(child_nanny, 2);
    child_nanny.close();
    if (query_value(child_nanny.database_path(), "SELECT count(*) FROM steps") != "2") _exit(4);
    if (query_value(child_nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::softmax' AND phase = 'forward'") != "2") {
      _exit(5);
    }
    std::exit(0);  // static destructors and atexit handlers run, as at the end of main
  }
  int status = 0;
  pid_t done = 0;
  for (int waited_ms = 0; waited_ms < 60000 && done == 0; waited_ms += 50) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the child did not exit within 60 s";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int64_t step = 3; step < 5; ++step) {
    auto guard = nanny.step(step);
    loss_of(step).backward();
  }
  EXPECT_TRUE(nanny.active());
  nanny.close();
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM steps"), "5");
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE op = 'aten::softmax' AND phase = 'forward'"), "5");
}

TEST(Nanny, UnwritableDirectoryWarnsOnceAndTrainingContinues) {
  ScratchDir dir;
  const std::string blocker = dir.file("file");
  std::fclose(std::fopen(blocker.c_str(), "w"));
  Options options;
  options.output_dir = blocker + "/logs";
  auto net = std::make_shared<Mlp>(4, 4, 4);
  testing::internal::CaptureStderr();
  Nanny nanny(net, options);
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 3, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.flush();
  nanny.close();
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(nanny.active());
  size_t count = 0;
  for (size_t at = warnings.find("switched off"); at != std::string::npos; at = warnings.find("switched off", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << warnings;
}

TEST(Nanny, StepsThatAreNotTracedObserveNothing) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Options options = traced_every_step(dir);
  options.trace_interval = 5;
  Nanny nanny(net, options);
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 7, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.close();
  EXPECT_EQ(query(nanny.database_path(), "SELECT DISTINCT step FROM tensor_stats ORDER BY step"),
            (test::Rows{{"0"}, {"5"}}));
}

// pause() ends the step in progress and observes nothing until resume(): no ops, no gradients, no
// step rows, no scalars, no alerts; resume() puts the gradient hooks back.
TEST(Nanny, APausedNannyObservesNothingUntilResumed) {
  ScratchDir dir;
  torch::manual_seed(20);
  auto net = std::make_shared<OverflowNet>(4500.0);
  Nanny nanny(net, traced_every_step(dir));
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  int overflow_line = 0;
  std::vector<size_t> alerts_after_step;
  for (int64_t step = 0; step < 6; ++step) {
    if (step == 1) nanny.pause();
    if (step == 4) nanny.resume();
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    auto h = net->fc1(x); overflow_line = __LINE__;
    if (step == 0) nanny.pause();  // inside a step: the step ends here, its backward pass is not seen
    torch::Tensor loss = torch::mse_loss(net->fc2(net->norm(h)), y);
    loss.backward();
    optimizer.step();
    nanny.record_scalar("loss", loss.item<double>());
    guard.end();
    alerts_after_step.push_back(nanny.alerts().size());
    if (step == 0) nanny.resume();
  }
  EXPECT_FALSE(nanny.paused());
  nanny.close();
  const std::string db = nanny.database_path();
  EXPECT_EQ(query(db, "SELECT step FROM steps ORDER BY step"), (test::Rows{{"0"}, {"4"}, {"5"}}));
  EXPECT_EQ(query(db, "SELECT DISTINCT step FROM tensor_stats WHERE phase='gradient' ORDER BY step"),
            (test::Rows{{"4"}, {"5"}}));
  EXPECT_EQ(query(db, "SELECT DISTINCT step FROM tensor_stats WHERE phase<>'gradient' ORDER BY step"),
            (test::Rows{{"0"}, {"4"}, {"5"}}));
  EXPECT_EQ(query(db, "SELECT step FROM scalars ORDER BY step"), (test::Rows{{"4"}, {"5"}}));
  // The overflow of step 0 was seen before the pause; steps 1-3 add nothing; step 4 sees it again.
  ASSERT_EQ(alerts_after_step.size(), 6u);
  EXPECT_GT(alerts_after_step[0], 0u);
  EXPECT_EQ(alerts_after_step[3], alerts_after_step[0]);
  EXPECT_GT(alerts_after_step[4], alerts_after_step[3]);
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line)}))
      << listing(nanny.alerts());
}

TEST(Nanny, PauseAndResumeAreIdempotentAndHarmlessOnAClosedNanny) {
  ScratchDir dir;
  auto net = std::make_shared<Mlp>(4, 4, 4);
  Nanny nanny(net, traced_every_step(dir));
  nanny.pause();
  nanny.pause();
  EXPECT_TRUE(nanny.paused());
  nanny.resume();
  nanny.resume();
  EXPECT_FALSE(nanny.paused());
  const torch::Tensor x = torch::randn({2, 4});
  train(nanny, *net, 1, [&](int64_t) { return net->fc2(net->fc1(x)).pow(2).mean(); });
  nanny.close();
  nanny.pause();
  nanny.resume();
  EXPECT_EQ(query(nanny.database_path(), "SELECT DISTINCT step FROM tensor_stats WHERE phase='gradient'"),
            (test::Rows{{"0"}}));
}

TEST(Nanny, WatchTracesWithoutAStepLoop) {
  ScratchDir dir;
  torch::manual_seed(18);
  auto net = std::make_shared<OverflowNet>(4500.0);
  Options options = traced_every_step(dir);
  Nanny& nanny = watch(net, options);
  const torch::Tensor x = torch::full({8, 16}, 2.0), y = torch::randn({8, 8});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  int overflow_line = 0;
  for (int i = 0; i < 3; ++i) {
    optimizer.zero_grad();
    auto h = net->fc1(x); overflow_line = __LINE__;
    torch::mse_loss(net->fc2(net->norm(h)), y).backward();
    optimizer.step();
  }
  nanny.flush();
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM steps"), "3");
  nanny.close();
}

// watch() has no step loop to follow: a step ends with each backward pass, whatever the model
// leaves unused (a parameter without a gradient must not carry steps over into the next pass).
TEST(Nanny, WatchEndsAStepWithEachBackwardPassEvenWithUnusedParameters) {
  struct WithSpare : torch::nn::Module {
    WithSpare()
        : fc1(register_module("fc1", torch::nn::Linear(4, 8))),
          fc2(register_module("fc2", torch::nn::Linear(8, 2))),
          spare(register_module("spare", torch::nn::Linear(8, 8))) {}
    torch::nn::Linear fc1, fc2, spare;
  };
  ScratchDir dir;
  torch::manual_seed(19);
  auto net = std::make_shared<WithSpare>();
  Nanny& nanny = watch(net, traced_every_step(dir));
  const torch::Tensor x = torch::randn({6, 4}), y = torch::randn({6, 2});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int i = 0; i < 4; ++i) {
    optimizer.zero_grad();
    torch::mse_loss(net->fc2(net->fc1(x).relu()), y).backward();
    optimizer.step();
  }
  nanny.close();
  // Four passes, four steps, each with the four gradients the pass produced.
  EXPECT_EQ(query(nanny.database_path(),
                  "SELECT step, count(*) FROM tensor_stats WHERE phase='gradient' GROUP BY step ORDER BY step"),
            (test::Rows{{"0", "4"}, {"1", "4"}, {"2", "4"}, {"3", "4"}}));
}


// watch() is process-wide: it starts again once closed (the test binary's watch tests share one
// process), and a second model while one is watched is named in a warning, not silently dropped.
TEST(Nanny, WatchStartsAgainAfterCloseAndWarnsAboutASecondModel) {
  struct Head : torch::nn::Module {
    Head() : head(register_module("head", torch::nn::Linear(4, 2))) {}
    torch::nn::Linear head;
  };
  ScratchDir first_dir, second_dir;
  torch::manual_seed(20);
  auto first_net = std::make_shared<Head>(), second_net = std::make_shared<Head>(), other_net = std::make_shared<Head>();
  const torch::Tensor x = torch::randn({6, 4});
  Nanny& first = watch(first_net, traced_every_step(first_dir));
  first_net->head(x).pow(2).mean().backward();
  first.close();

  Nanny& second = watch(second_net, traced_every_step(second_dir));
  EXPECT_NE(&second, &first);
  testing::internal::CaptureStderr();
  Nanny& again = watch(second_net, traced_every_step(first_dir));
  const std::string same_model_warnings = testing::internal::GetCapturedStderr();
  testing::internal::CaptureStderr();
  Nanny& other = watch(other_net, traced_every_step(first_dir));
  const std::string other_model_warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(&again, &second);
  EXPECT_EQ(&other, &second);
  EXPECT_EQ(same_model_warnings, "");
  EXPECT_NE(other_model_warnings.find("watch() already watches another model"), std::string::npos)
      << other_model_warnings;

  second_net->head(x).pow(2).mean().backward();
  second.close();
  EXPECT_EQ(second.database_path(), second_dir.file("metrics.db"));
  EXPECT_EQ(query(second.database_path(), "SELECT name FROM tensor_stats WHERE phase='gradient' ORDER BY name"),
            (test::Rows{{"head.bias"}, {"head.weight"}}));
}

// mpnanny's GradScaler keeps its scale in an fp32 tensor that it fills with 65536 (above fp16's
// 65504) and grows by fill_: its own bookkeeping, which the nanny must not judge as the model's
// values, on a healthy model that the scaler grows twice.
TEST(Scenario, TrainingWithMpnannysGradScalerRaisesNothing) {
  ScratchDir dir;
  torch::manual_seed(21);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({64, 16}), y = torch::randn({64, 8});
  GradScaler scaler({.growth_interval = 2});
  Options options = traced_every_step(dir);
  options.loss_scale = loss_scale_of(scaler);
  Nanny nanny(net, options);
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int64_t step = 0; step < 5; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    scaler.scale(torch::mse_loss(net->fc2(torch::relu(net->fc1(x))), y)).backward();
    scaler.step(optimizer);
    scaler.update();
  }
  nanny.close();
  EXPECT_EQ(scaler.get_scale(), 65536.0 * 4);
  EXPECT_TRUE(nanny.alerts().empty()) << listing(nanny.alerts());
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM loss_scale WHERE skipped=0"), "5");
}

// An evaluation step under InferenceMode, then training steps: the nanny keeps copies of the
// weights for the update ratio, and copies made under InferenceMode would be inference tensors
// that the next step could not copy into. Later steps must be observed as usual, with no warning.
TEST(Scenario, AStepUnderInferenceModeLeavesTheNextStepsObserved) {
  ScratchDir dir;
  torch::manual_seed(22);
  auto net = std::make_shared<Mlp>(16, 32, 8);
  const torch::Tensor x = torch::randn({8, 16}), y = torch::randn({8, 8});
  Nanny nanny(net, traced_every_step(dir));
  testing::internal::CaptureStderr();
  {
    c10::InferenceMode inference;
    auto guard = nanny.step(0);
    (void)net->fc2(torch::relu(net->fc1(x)));
  }
  int overflow_line = 0;
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
  for (int64_t step = 1; step <= 2; ++step) {
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    auto h = torch::exp(net->fc1(x) + 20); overflow_line = __LINE__;  // e^20 = 4.9e8
    torch::mse_loss(net->fc2(h / 1e8), y).backward();
    optimizer.step();
  }
  const bool active_before_close = nanny.active();
  nanny.close();
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(active_before_close);
  EXPECT_EQ(warnings, "");
  EXPECT_EQ(distinct(nanny.alerts()), (std::set<std::string>{"OVERFLOW@" + at_line(overflow_line)}))
      << listing(nanny.alerts());
  EXPECT_EQ(query(nanny.database_path(), "SELECT DISTINCT step FROM alerts ORDER BY step"),
            (test::Rows{{"1"}, {"2"}}));
  EXPECT_EQ(query_value(nanny.database_path(),
                        "SELECT count(*) FROM tensor_stats WHERE phase='weight' AND update_ratio IS NOT NULL"),
            "8");  // four parameters, two training steps
}

// Gradients the stat kernel once returned empty stats for -- a sparse Embedding's, a complex
// parameter's, a parameter with no elements -- were reported as vanishing (norm 0) on every
// traced step. They are measured (sparse: the stored rows; complex: both parts) or left out.
TEST(Scenario, SparseComplexAndEmptyParametersAreMeasuredNotReportedAsVanishing) {
  struct Unusual : torch::nn::Module {
    Unusual()
        : embedding(register_module("embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(10, 8).sparse(true)))),
          rotation(register_parameter("rotation", torch::randn({4}, torch::kComplexFloat))),
          nothing(register_parameter("nothing", torch::zeros({4, 0}))) {}
    torch::nn::Embedding embedding;
    torch::Tensor rotation, nothing;
  };
  ScratchDir dir;
  torch::manual_seed(23);
  auto net = std::make_shared<Unusual>();
  const torch::Tensor tokens = torch::tensor({1, 3, 3, 7}, torch::kLong);
  Nanny nanny(net, traced_every_step(dir));
  train(nanny, *net, 3, [&](int64_t) {
    return net->embedding(tokens).pow(2).mean() + net->rotation.abs().pow(2).sum() + net->nothing.sum();
  });
  nanny.close();
  EXPECT_TRUE(nanny.alerts().empty()) << listing(nanny.alerts());
  // Three distinct tokens, eight values each; four complex values, two parts each.
  EXPECT_EQ(query(nanny.database_path(),
                  "SELECT name, numel, norm > 0 FROM tensor_stats WHERE phase='gradient' AND step=0 ORDER BY name"),
            (test::Rows{{"embedding.weight", "24", "1"}, {"rotation", "8", "1"}}));
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM tensor_stats WHERE name='nothing'"), "0");
}

// A backward pass that another thread runs while the training loop begins and ends steps: its
// gradient hooks write the step's gradients while end_step reads and clears them. A race there
// corrupted the heap in about one run of three (and TSan reports it: SANITIZE=tsan). One thread
// only: two backward passes into the same parameters race inside LibTorch's AccumulateGrad.
TEST(Nanny, ABackwardPassOnAnotherThreadWhileStepsBeginAndEnd) {
  ScratchDir dir;
  torch::manual_seed(24);
  torch::nn::Linear layer(64, 64);
  Nanny nanny(layer, traced_every_step(dir));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> passes{0};
  std::thread backward_passes([&] {
    while (!stop.load()) {
      torch::log(torch::softmax(layer->forward(torch::randn({32, 64})), 1)).mean().backward();
      ++passes;
    }
  });
  for (int64_t step = 0; step < 600; ++step) {
    auto guard = nanny.step(step);
    std::this_thread::yield();
  }
  stop = true;
  backward_passes.join();
  nanny.flush();
  EXPECT_TRUE(nanny.active());
  EXPECT_GT(passes.load(), 0);
  EXPECT_EQ(query_value(nanny.database_path(), "SELECT count(*) FROM steps"), "600");
  nanny.close();
}

// watch()'s nanny is closed by an atexit handler, which ends its last step and reads the weights
// once more. exit() has destroyed the main thread's thread_locals by then: state the stat kernel
// or the op observer kept there must still be usable (it was freed memory, and glibc aborted).
TEST(Nanny, WatchStoresItsLastStepWhenTheProgramExits) {
  ScratchDir dir;
  const auto train_and_exit = [&] {
    mallopt(M_PERTURB, 0x5a);  // freed memory filled, so that using it shows
    torch::manual_seed(25);
    auto net = std::make_shared<Mlp>(16, 32, 8);
    watch(net, traced_every_step(dir));
    const torch::Tensor x = torch::randn({8, 16}), y = torch::randn({8, 8});
    torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(1e-3));
    for (int i = 0; i < 3; ++i) {
      optimizer.zero_grad();
      torch::mse_loss(net->fc2(torch::exp(net->fc1(x) * 1e3)), y).backward();  // INF: dense
      optimizer.step();
    }
    std::exit(0);
  };
  EXPECT_EXIT(train_and_exit(), testing::ExitedWithCode(0), "");
  const std::string database = dir.file("metrics.db");
  // Three backward passes end steps 0 to 2; step 3, open at exit, is ended by the handler.
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM steps"), "4");
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM tensor_stats WHERE step=3 AND phase='weight'"), "4");
  // ...counted in bins that are zero where a count starts (the child fills freed memory with 0x5a,
  // so counts made in freed bins come out wrong even where glibc does not notice the write).
  EXPECT_EQ(query_value(database,
                        "SELECT count(*) FROM tensor_stats t JOIN histograms h USING (run_id, step, seq) "
                        "WHERE t.step=3 AND t.phase='weight' AND (SELECT sum(value) FROM json_each(h.counts)) = "
                        "t.numel - t.zero_count - t.nan_count - t.inf_count"),
            "4");
}

// The verification session and watch()'s nanny close from exit handlers registered when they
// start, and name risks and verdicts there. A vocabulary table first built after such a handler
// was registered used to be destroyed before the handler ran: LibTorch 2.6's verified examples
// crashed in parse<RiskKind> at exit. The child registers a handler, builds the table, exits.
TEST(Vocabulary, TablesOutliveExitHandlersRegisteredBeforeThem) {
  const auto register_build_and_exit = [] {
    mallopt(M_PERTURB, 0x5a);  // freed memory filled, so that reading it shows
    std::atexit([] { std::_Exit(vocab::parse<vocab::RiskKind>("domain") == vocab::RiskKind::Domain ? 0 : 7); });
    if (vocab::parse<vocab::RiskKind>("overflow") != vocab::RiskKind::Overflow) std::_Exit(8);  // built now
    std::exit(0);
  };
  EXPECT_EXIT(register_build_and_exit(), testing::ExitedWithCode(0), "");
}

// A user's library whose name begins like LibTorch's is the user's: a prefix match skipped every
// frame of libtorch_myops.so, and its alerts went to whoever called into it.
TEST(SourceLocator, LibTorchsLibrariesAreKnownByTheirNamesNotByAPrefix) {
  for (const char* library : {"/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13", "/opt/libtorch/lib/libtorch.so",
                              "libc10.so", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/libc-2.31.so",
                              "/lib64/ld-linux-x86-64.so.2", "libcaffe2_observers.so", "libmpnanny_runtime.so.0",
                              "libtorchvision.so"}) {
    EXPECT_TRUE(SourceLocator::is_library_module(library)) << library;
  }
  for (const char* library : {"/work/build/libtorch_myops.so", "libc10_extensions.so", "libtorch_ext.so",
                              "/home/me/libcustom.so", "/usr/bin/train", "libmodel-2.so"}) {
    EXPECT_FALSE(SourceLocator::is_library_module(library)) << library;
  }
}

// The source locator skips LibTorch's and the system's code by its paths and, without debug
// information, by its namespaces. User code in a folder named like a common one (ext/), or
// compiled without -g, is still the user's: the folder name once moved the alert to the caller's
// line, and a frame without debug information (LibTorch's at::exp, not inlined) was taken for
// the user's.
TEST(Scenario, UserCodeInAFolderNamedExtOrWithoutDebugInfoIsTheUsers) {
  ScratchDir dir;
  Nanny nanny(traced_every_step(dir));
  const torch::Tensor x = torch::ones({4, 4});
  int ext_line = 0;
  {
    auto guard = nanny.step(0);
    ext_line = test::overflow_in_a_folder_named_ext(x);
  }
  int call_line = 0;
  {
    auto guard = nanny.step(1);
    test::overflow_without_debug_info(x); call_line = __LINE__;
  }
  nanny.close();
  const std::vector<Alert> alerts = nanny.alerts();
  ASSERT_EQ(alerts.size(), 2u) << listing(alerts);
  EXPECT_EQ(alerts[0].type, AlertType::Overflow);
  const std::string ext_file = "attribution/ext/ExtFolder.cpp";
  EXPECT_TRUE(alerts[0].location.file.size() >= ext_file.size() &&
              alerts[0].location.file.compare(alerts[0].location.file.size() - ext_file.size(), ext_file.size(),
                                              ext_file) == 0)
      << alerts[0].location.file;
  EXPECT_EQ(alerts[0].location.line, ext_line);
  // Without debug information: the user's function by name only, or (where the binary's other
  // debug information covers the address, as in this test binary) the user's line that called it;
  // never LibTorch's at::exp.
  EXPECT_EQ(alerts[1].type, AlertType::Overflow);
  const SourceLocation& where = alerts[1].location;
  const bool by_name = where.line == 0 && where.function.rfind("mpnanny::test::overflow_without_debug_info", 0) == 0;
  const bool by_caller = where.line == call_line && where.file.find(kThisFile) != std::string::npos;
  EXPECT_TRUE(by_name || by_caller) << where.function << " at " << where.file << ":" << where.line;
}
}  // namespace
}  // namespace mpnanny
