// Data parallelism: what the ranks' reports say (GroupView), and, where LibTorch's Gloo backend can
// be built, ranks as threads of this process in one ProcessGroupGloo over an in-memory store: the
// exchange, the dense window every rank opens, LOSS_SCALE_DIVERGED, and a switched-off rank that
// still takes part. The same with processes is test/e2e/run_ddp.py.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "../../runtime/src/RankAgreement.h"
#include "TestSupport.h"
#include "mpnanny/Nanny.h"

#ifdef USE_C10D_GLOO
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "gloo_group.h"  // examples/
#endif

namespace mpnanny {
namespace {

using test::query;
using test::query_value;
using test::Rows;
using test::ScratchDir;

RankReport scaled(double scale, bool skipped = false) {
  RankReport report;
  report.loss_scale = scale;
  report.skipped = skipped;
  return report;
}

TEST(GroupView, QuietGroupIsNotNotable) {
  const GroupView view{{scaled(1024), scaled(1024), scaled(1024)}};
  EXPECT_FALSE(view.any_error());
  EXPECT_FALSE(view.loss_scale_divergence());
  EXPECT_FALSE(view.notable());
  const GroupView unscaled{{RankReport{}, RankReport{}}};
  EXPECT_FALSE(unscaled.notable());
}

TEST(GroupView, OneRanksErrorOrBadGradientIsTheGroups) {
  GroupView view{{RankReport{}, RankReport{}, RankReport{}}};
  view.ranks[1].error = true;
  EXPECT_TRUE(view.any_error());
  EXPECT_TRUE(view.notable());
  GroupView bad{{RankReport{}, RankReport{}}};
  bad.ranks[0].bad_before = BadValue::Overflow;
  EXPECT_FALSE(bad.any_error());
  EXPECT_TRUE(bad.notable());
}

TEST(GroupView, ScaleOrSkipDisagreementNamesEveryRank) {
  const GroupView scales{{scaled(65536), scaled(32768, true), scaled(65536)}};
  const auto message = scales.loss_scale_divergence();
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("rank 0: scale 65536, stepped"), std::string::npos) << *message;
  EXPECT_NE(message->find("rank 1: scale 32768, skipped"), std::string::npos) << *message;
  EXPECT_NE(message->find("rank 2: scale 65536, stepped"), std::string::npos) << *message;
  EXPECT_TRUE(scales.notable());
  // The same scale, but one rank skipped: the ranks' weights part ways all the same.
  EXPECT_TRUE((GroupView{{scaled(8), scaled(8, true)}}.loss_scale_divergence()));
  // One rank with a scaler, one without.
  EXPECT_TRUE((GroupView{{scaled(8), RankReport{}}}.loss_scale_divergence()));
}

TEST(GroupView, RecordsNameParametersAndLeaveUnknownsNull) {
  GroupView view{{RankReport{}, scaled(4, true)}};
  view.ranks[1].bad_before = BadValue::Inf;
  view.ranks[1].bad_parameter = 1;
  view.ranks[0].bad_parameter = 7;  // out of range: no name rather than a wrong one
  const auto rows = view.records(12, {"fc1.weight", "fc1.bias"});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].step, 12);
  EXPECT_EQ(rows[0].rank, 0);
  EXPECT_FALSE(rows[0].bad_before);
  EXPECT_FALSE(rows[0].bad_parameter);
  EXPECT_FALSE(rows[0].loss_scale);
  EXPECT_FALSE(rows[0].skipped);
  EXPECT_EQ(rows[1].rank, 1);
  EXPECT_EQ(rows[1].bad_before, std::optional<std::string>("inf"));
  EXPECT_EQ(rows[1].bad_parameter, std::optional<std::string>("fc1.bias"));
  EXPECT_EQ(rows[1].loss_scale, std::optional<double>(4));
  EXPECT_EQ(rows[1].skipped, std::optional<bool>(true));
}

TEST(WorstValue, NanOverInfOverOverflowOfTheJudgedFormat) {
  TensorStats stats;
  stats.numel = 10;
  EXPECT_EQ(worst_value(stats, Precision::FP16), std::nullopt);
  stats.fp16_overflow = 1;
  EXPECT_EQ(worst_value(stats, Precision::FP16), BadValue::Overflow);
  EXPECT_EQ(worst_value(stats, Precision::BF16), std::nullopt);
  stats.inf_count = 1;
  EXPECT_EQ(worst_value(stats, Precision::BF16), BadValue::Inf);
  stats.nan_count = 1;
  EXPECT_EQ(worst_value(stats, Precision::FP16), BadValue::Nan);
}

#ifdef USE_C10D_GLOO

/// `size` ranks as threads, each with its own ProcessGroupGloo over one in-memory store.
void run_ranks(int size, const std::function<void(int rank, c10::intrusive_ptr<c10d::ProcessGroup> group)>& body) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      auto options = c10d::ProcessGroupGloo::Options::create();
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      body(rank, gloo_group(store, rank, size, options));
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(RankAgreement, EveryRankGetsEveryReport) {
  std::vector<GroupView> views(3);
  run_ranks(3, [&](int rank, c10::intrusive_ptr<c10d::ProcessGroup> group) {
    RankAgreement agreement(group);
    RankReport mine = scaled(1024.0 * (rank + 1), rank == 2);
    mine.error = rank == 1;
    if (rank == 2) mine.bad_before = BadValue::Nan;
    mine.bad_parameter = rank == 2 ? 3 : -1;
    views[static_cast<size_t>(rank)] = agreement.exchange(mine);
  });
  for (const GroupView& view : views) {
    ASSERT_EQ(view.ranks.size(), 3u);
    EXPECT_EQ(view.ranks[0].loss_scale, std::optional<double>(1024));
    EXPECT_EQ(view.ranks[1].loss_scale, std::optional<double>(2048));
    EXPECT_EQ(view.ranks[2].loss_scale, std::optional<double>(3072));
    EXPECT_TRUE(view.ranks[1].error);
    EXPECT_FALSE(view.ranks[0].error);
    EXPECT_EQ(view.ranks[2].bad_before, BadValue::Nan);
    EXPECT_EQ(view.ranks[2].bad_parameter, 3);
    EXPECT_EQ(view.ranks[0].bad_parameter, -1);
    EXPECT_TRUE(view.ranks[2].skipped);
    EXPECT_FALSE(view.ranks[1].skipped);
  }
}

/// Every rank trains the same small model for `steps` steps (traced every 4th); `poison` makes a
/// rank's gradient Inf at one step; each rank's loss scale comes from `scale_of`.
struct DataParallelRun {
  int size = 2;
  int64_t steps = 10;
  int poison_rank = -1;
  int64_t poison_step = -1;
  bool all_reduce = true;
  std::function<double(int rank, int64_t step)> scale_of;
  std::function<void(int rank, Options&)> adjust;
  std::vector<std::vector<Alert>> alerts;

  void run(const ScratchDir& dir) {
    alerts.assign(static_cast<size_t>(size), {});
    run_ranks(size, [&](int rank, c10::intrusive_ptr<c10d::ProcessGroup> group) {
      torch::manual_seed(0);
      torch::nn::Linear model(8, 1);
      torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
      int64_t step = 0;
      Options options;
      options.output_dir = dir.path();
      options.trace_interval = 4;
      options.dense_steps = 3;
      options.verbosity = 0;
      options.watched_ops = {"aten::mse_loss"};
      options.process_group = group;
      if (scale_of) options.loss_scale = [&, rank] { return scale_of(rank, step); };
      if (adjust) adjust(rank, options);
      Nanny nanny(model, options);
      for (step = 0; step < steps; ++step) {
        auto guard = nanny.step(step);
        optimizer.zero_grad();
        torch::Tensor x = torch::randn({16, 8});
        if (rank == poison_rank && step == poison_step) x = x * std::numeric_limits<float>::infinity();
        torch::mse_loss(model->forward(x), torch::zeros({16, 1})).backward();
        for (auto& parameter : model->parameters()) {
          if (!all_reduce) break;
          std::vector<torch::Tensor> gradient = {parameter.grad()};
          group->allreduce(gradient)->wait();
        }
        optimizer.step();
      }
      nanny.close();
      alerts[static_cast<size_t>(rank)] = nanny.alerts();
    });
  }
};

std::string rank_file(const ScratchDir& dir, int rank) {
  return dir.file("metrics-rank" + std::to_string(rank) + ".db");
}

TEST(DataParallel, AnErrorOnOneRankTracesEveryRankDensely) {
  ScratchDir dir;
  DataParallelRun run;
  run.poison_rank = 1;
  run.poison_step = 4;
  run.run(dir);
  for (int rank = 0; rank < run.size; ++rank) {
    const std::string db = rank_file(dir, rank);
    // Step 4 is traced (interval 4); the window of 3 steps follows on both ranks, and as the
    // weights stay NaN every traced step errs again and extends it to the end.
    EXPECT_EQ(query(db, "SELECT step FROM steps WHERE traced=1 ORDER BY step"),
              (Rows{{"0"}, {"4"}, {"5"}, {"6"}, {"7"}, {"8"}, {"9"}}))
        << "rank " << rank;
    EXPECT_EQ(query(db,
                    "SELECT rank, bad_before IS NOT NULL, bad_parameter IS NOT NULL FROM rank_agreement "
                    "WHERE step=4 ORDER BY rank"),
              (Rows{{"0", "0", "0"}, {"1", "1", "1"}}))
        << "rank " << rank;
    EXPECT_EQ(query_value(db, "SELECT rank || '/' || world_size FROM runs"), std::to_string(rank) + "/2");
    EXPECT_NE(query_value(db,
                          "SELECT count(*) FROM tensor_stats WHERE step=4 AND phase='reduced_gradient' "
                          "AND inf_count + nan_count > 0"),
              "0")
        << "rank " << rank << " received the Inf through the all-reduce";
  }
}

TEST(DataParallel, AnotherRanksErrorOpensThisRanksWindow) {
  ScratchDir dir;
  DataParallelRun run;
  run.poison_rank = 1;
  run.poison_step = 4;
  run.all_reduce = false;  // rank 0 never sees the NaN: only the agreement tells it
  run.run(dir);
  EXPECT_TRUE(run.alerts[0].empty()) << run.alerts[0].front().message;
  EXPECT_FALSE(run.alerts[1].empty());
  EXPECT_EQ(query(rank_file(dir, 0), "SELECT step FROM steps WHERE dense=1 ORDER BY step"),
            query(rank_file(dir, 1), "SELECT step FROM steps WHERE dense=1 ORDER BY step"));
  EXPECT_EQ(query(rank_file(dir, 0), "SELECT step FROM steps WHERE traced=1 ORDER BY step"),
            (Rows{{"0"}, {"4"}, {"5"}, {"6"}, {"7"}, {"8"}, {"9"}}));
  EXPECT_EQ(query(rank_file(dir, 0), "SELECT rank, error FROM rank_agreement WHERE step=4 ORDER BY rank"),
            (Rows{{"0", "0"}, {"1", "1"}}));
}

TEST(DataParallel, QuietRanksWriteNoAgreementRowsAndTraceOnlyTheInterval) {
  ScratchDir dir;
  DataParallelRun run;
  run.scale_of = [](int, int64_t) { return 1024.0; };
  run.run(dir);
  for (int rank = 0; rank < run.size; ++rank) {
    const std::string db = rank_file(dir, rank);
    EXPECT_EQ(query(db, "SELECT step FROM steps WHERE traced=1 ORDER BY step"), (Rows{{"0"}, {"4"}, {"8"}}));
    EXPECT_EQ(query_value(db, "SELECT count(*) FROM sqlite_master WHERE name='rank_agreement'"), "0");
    for (const Alert& alert : run.alerts[static_cast<size_t>(rank)]) {
      EXPECT_NE(alert.type, AlertType::LossScaleDiverged) << alert.message;
    }
  }
}

TEST(DataParallel, RanksWithDifferentScalesRaiseLossScaleDiverged) {
  ScratchDir dir;
  DataParallelRun run;
  // Rank 1 backed off at step 3 on its own; the agreement at step 4 sees the scales differ.
  run.scale_of = [](int rank, int64_t step) { return rank == 1 && step >= 3 ? 512.0 : 1024.0; };
  run.run(dir);
  for (int rank = 0; rank < run.size; ++rank) {
    bool diverged = false;
    for (const Alert& alert : run.alerts[static_cast<size_t>(rank)]) {
      if (alert.type != AlertType::LossScaleDiverged) continue;
      diverged = true;
      EXPECT_EQ(alert.severity, Severity::Error);
      EXPECT_EQ(alert.step, 4);
      EXPECT_NE(alert.message.find("rank 0: scale 1024, stepped"), std::string::npos) << alert.message;
      EXPECT_NE(alert.message.find("rank 1: scale 512, skipped"), std::string::npos) << alert.message;
      break;
    }
    EXPECT_TRUE(diverged) << "rank " << rank;
    EXPECT_EQ(
        query(rank_file(dir, rank), "SELECT rank, loss_scale, skipped FROM rank_agreement WHERE step=4 ORDER BY rank"),
        (Rows{{"0", "1024.0", "0"}, {"1", "512.0", "1"}}));
  }
}

TEST(DataParallel, ASwitchedOffRankStillAgreesSoNoRankWaits) {
  ScratchDir dir;
  DataParallelRun run;
  run.poison_rank = 0;
  run.poison_step = 4;
  // Rank 1's nanny cannot open its database and switches off; rank 0 must neither hang at its
  // next agreement nor lose the dense window rank 1 would not have asked for anyway.
  run.adjust = [&](int rank, Options& options) {
    if (rank == 1) options.output_dir = "/proc/mpnanny-cannot-write-here";
  };
  run.run(dir);  // a hang here is the failure (ctest's timeout)
  EXPECT_EQ(query(rank_file(dir, 0), "SELECT step FROM steps WHERE traced=1 ORDER BY step"),
            (Rows{{"0"}, {"4"}, {"5"}, {"6"}, {"7"}, {"8"}, {"9"}}));
  EXPECT_EQ(
      query(rank_file(dir, 0), "SELECT rank, bad_before IS NOT NULL FROM rank_agreement WHERE step=4 ORDER BY rank"),
      (Rows{{"0", "1"}, {"1", "0"}}));
}

#endif  // USE_C10D_GLOO

}  // namespace
}  // namespace mpnanny
