// Writes the databases the CLI and report tests read, each scenario in its own directory under
// argv[1]: real LibTorch training on the CPU with injected problems, recorded by the runtime.
// Deterministic: one thread, fixed seeds, no timing in what the tests compare.
#include <sqlite3.h>
#include <torch/torch.h>  // with <torch/version.h>: TORCH_VERSION_MAJOR

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "mpnanny/ComparePrecision.h"
#include "mpnanny/Nanny.h"

namespace fs = std::filesystem;

namespace {

int g_fc1_line = 0, g_log_softmax_line = 0, g_never_line = 0;

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const std::string& last = "fc2")
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))), fc2(register_module(last, torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc1(x)); g_fc1_line = __LINE__;
    if (x.size(0) < 0) {  // never taken: the verdicts' NOT_REACHED site
      h = torch::exp(h);
    }
    g_never_line = __LINE__ - 2;
    auto logits = fc2(h);
    g_log_softmax_line = __LINE__; return torch::log_softmax(logits, -1);
  }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

torch::Tensor inputs() { return torch::rand({32, 8}) + 1.5; }
torch::Tensor targets() { return torch::arange(32) % 4; }

void exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::cerr << "scenario: SQLite: " << (error ? error : "?") << "\n";
    std::exit(1);
  }
}

/// The verdict table the verification issue writes (agreed layout, see README), filled the way a
/// MPNANNY_VERIFY=1 run of this model would.
void add_verdicts(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  exec(db,
       "CREATE TABLE site_verdicts(run_id INTEGER NOT NULL, site_id TEXT NOT NULL, check_name TEXT NOT NULL, "
       "file TEXT, line INTEGER, function TEXT, verdict TEXT NOT NULL, evidence TEXT, steps_observed INTEGER, "
       "worst_headroom REAL, first_step INTEGER, value REAL, PRIMARY KEY(run_id, site_id))");
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO site_verdicts VALUES((SELECT MAX(run_id) FROM runs),?,?,?,?,?,?,?,?,?,?,?)", -1,
                     &insert, nullptr);
  const std::string file = fs::absolute(__FILE__).lexically_normal().string();
  struct Row {
    const char *id, *check;
    int line;
    const char *verdict, *evidence;
    int steps;
    double headroom;
    int first_step;
    double value;
  };
  const Row rows[] = {
      {"3f9a1c0d7e21", "mpnanny-risky-op", g_fc1_line, "CONFIRMED", "max |x| = 72013 > 65504 at step 6", 7, 0.91, 6,
       72013.0},
      {"b27e44a90c13", "mpnanny-log-softmax", g_log_softmax_line, "NOT_OBSERVED",
       "executed 7 times, healthy; worst headroom 3.1e+03x", 7, 3100.0, -1, 0.0},
      {"c0ffee123456", "mpnanny-risky-op", g_never_line, "NOT_REACHED", "never executed", 0, -1.0, -1, 0.0},
  };
  for (const Row& row : rows) {
    sqlite3_bind_text(insert, 1, row.id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 2, row.check, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 3, file.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(insert, 4, row.line);
    sqlite3_bind_text(insert, 5, "MlpImpl::forward(at::Tensor)", -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 6, row.verdict, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 7, row.evidence, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(insert, 8, row.steps);
    if (row.headroom >= 0) sqlite3_bind_double(insert, 9, row.headroom); else sqlite3_bind_null(insert, 9);
    if (row.first_step >= 0) sqlite3_bind_int(insert, 10, row.first_step); else sqlite3_bind_null(insert, 10);
    if (row.value > 0) sqlite3_bind_double(insert, 11, row.value); else sqlite3_bind_null(insert, 11);
    if (sqlite3_step(insert) != SQLITE_DONE) {
      std::cerr << "scenario: cannot insert a verdict: " << sqlite3_errmsg(db) << "\n";
      std::exit(1);
    }
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
}

/// Trains 10 steps judged against fp16, with a loss scale that backs off at step 4 and fc1's
/// weights blown up to 4500 at step 6: inputs near 2 make its outputs about 72000 > 65504.
void overflow_run(const fs::path& dir) {
  torch::manual_seed(0);
  Mlp model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  const double scales[] = {65536, 65536, 65536, 65536, 32768, 32768, 32768, 32768, 32768, 32768};
  int64_t current = 0;
  mpnanny::Options options;
  options.output_dir = dir.string();
  options.trace_interval = 2;
  options.dense_steps = 3;
  options.verbosity = 0;
  options.precision = mpnanny::Precision::FP16;
  options.loss_scale = [&] { return scales[current]; };
  mpnanny::Nanny nanny(model, options);
  const auto x = inputs(), y = targets();
  for (int64_t step = 0; step < 10; ++step) {
    current = step;
    if (step == 6) {
      torch::NoGradGuard no_grad;
      model->fc1->weight.fill_(4500.0);
    }
    auto guard = nanny.step(step);
    optimizer.zero_grad();
    auto loss = torch::nll_loss(model->forward(x), y);
    (loss * scales[step]).backward();
    for (auto& p : model->parameters()) p.mutable_grad().div_(scales[step]);
    optimizer.step();
    nanny.record_scalar("loss", loss.item<double>());
    nanny.record_scalar("lr", 0.01);
  }
  nanny.close();
  add_verdicts((dir / "metrics.db").string());
}

/// Two ranks, as torchrun would start them (RANK set): rank 1 feeds an infinity at step 2.
void rank_runs(const fs::path& dir) {
  for (int rank = 0; rank < 2; ++rank) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "2", 1);
    torch::manual_seed(rank);
    Mlp model;
    mpnanny::Options options;
    options.output_dir = dir.string();
    options.trace_interval = 1;
    options.verbosity = 0;
    mpnanny::Nanny nanny(model, options);
    auto x = inputs();
    const auto y = targets();
    for (int64_t step = 0; step < 3; ++step) {
      if (rank == 1 && step == 2) x[0][0] = std::numeric_limits<float>::infinity();
      auto guard = nanny.step(step);
      model->zero_grad();
      auto loss = torch::nll_loss(model->forward(x), y);
      loss.backward();
      nanny.record_scalar("loss", loss.item<double>());
    }
    nanny.close();
  }
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

/// A layer whose name is markup: the report must show it as text.
void script_run(const fs::path& dir) {
  torch::manual_seed(0);
  Mlp model("<script>alert(1)</script>");
  mpnanny::Options options;
  options.output_dir = dir.string();
  options.trace_interval = 1;
  options.verbosity = 0;
  mpnanny::Nanny nanny(model, options);
  const auto x = inputs(), y = targets();
  for (int64_t step = 0; step < 2; ++step) {
    auto guard = nanny.step(step);
    model->zero_grad();
    auto loss = torch::nll_loss(model->forward(x), y);
    loss.backward();
    nanny.record_scalar("<b>loss</b>", loss.item<double>());
  }
  nanny.close();
}

/// The same model and data trained in fp32 and in bf16 (converted), 8 steps each.
void training_pair(const fs::path& dir) {
  for (const bool bf16 : {false, true}) {
    torch::manual_seed(0);
    Mlp model;
    if (bf16) model->to(torch::kBFloat16);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.5));
    mpnanny::Options options;
    options.output_dir = (dir / (bf16 ? "bf16" : "fp32")).string();
    options.trace_interval = 1;
    options.verbosity = 0;
    options.precision = mpnanny::Precision::BF16;
    mpnanny::Nanny nanny(model, options);
    auto x = inputs();
    if (bf16) x = x.to(torch::kBFloat16);
    const auto y = targets();
    for (int64_t step = 0; step < 8; ++step) {
      auto guard = nanny.step(step);
      optimizer.zero_grad();
      auto loss = torch::nll_loss(model->forward(x).to(torch::kFloat), y);
      loss.backward();
      optimizer.step();
      nanny.record_scalar("loss", loss.item<double>());
    }
    nanny.close();
  }
}

bool same_tensors(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && (a[i].scalar_type() != b[i].scalar_type() || !torch::equal(a[i], b[i]))) return false;
  }
  return true;
}

/// compare_precision in bf16 (CPU autocast) and in fp16 (a converted model; LibTorch 1.13 has
/// no fp16 matmul on the CPU, so that pass fails there, and runs on 2.x): either way the model
/// comes back as it was.
void one_pass_comparison(const fs::path& dir) {
  for (const auto precision : {mpnanny::Precision::BF16, mpnanny::Precision::FP16}) {
    torch::manual_seed(0);
    Mlp model;
    model->train();
    const auto x = inputs();
    // Gradients left by the user's last step must survive the comparison.
    torch::nll_loss(model->forward(x), targets()).backward();
    std::vector<torch::Tensor> parameters, gradients;
    for (const auto& p : model->parameters()) {
      parameters.push_back(p.detach().clone());
      gradients.push_back(p.grad().clone());
    }
    mpnanny::PrecisionCompareOptions options;
    const bool bf16 = precision == mpnanny::Precision::BF16;
    const fs::path out = dir / (bf16 ? "bf16-run" : "fp16-run");
    options.output_dir = out.string();
    options.nanny.verbosity = 0;
    const auto result = mpnanny::compare_precision(model, x, precision, options);
    std::vector<torch::Tensor> parameters_after, gradients_after;
    for (const auto& p : model->parameters()) {
      parameters_after.push_back(p.detach());
      gradients_after.push_back(p.grad());
    }
    std::ofstream file(out / "result.txt");
    file << "reference " << result.reference_db << "\nlow " << result.low_db << "\nmode " << result.low_mode
         << "\nlow_ran " << result.low_ran << "\ntraining_restored " << model->is_training()
         << "\nparameters_restored " << same_tensors(parameters, parameters_after) << "\ngradients_restored "
         << same_tensors(gradients, gradients_after) << "\nerror " << result.error << "\ntorch_major "
         << TORCH_VERSION_MAJOR << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mpnanny_cli_scenario OUTPUT_DIR\n";
    return 2;
  }
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MPNANNY_DIR", "MPNANNY_DISABLE", "MPNANNY_TRACE_INTERVAL"}) {
    unsetenv(name);
  }
  at::set_num_threads(1);
  const fs::path root = argv[1];
  fs::remove_all(root);
  fs::create_directories(root);
  overflow_run(root / "run");
  rank_runs(root / "ranks");
  script_run(root / "script");
  training_pair(root / "train");
  one_pass_comparison(root / "compare-one");
  std::cout << "scenario databases in " << root.string() << "\n";
  return 0;
}
