// Site verification's sites file and verdict rules, without training.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "../../runtime/src/SiteVerifier.h"
#include "TestSupport.h"

namespace mpnanny {
namespace {

TensorStats stats_with(double max_abs, int64_t fp16_overflow = 0, int64_t nan = 0, int64_t fp16_flush = 0) {
  TensorStats s;
  s.numel = 10;
  s.max_abs = max_abs;
  s.min_abs_nonzero = fp16_flush > 0 ? 1e-9 : 1e-3;
  s.fp16_overflow = fp16_overflow;
  s.nan_count = nan;
  s.fp16_flush = fp16_flush;
  return s;
}

Site site(const std::string& file, int64_t line, const std::string& risk, std::vector<std::string> ops = {}) {
  Site s;
  s.id = "0123456789abcdef";
  s.check = "mpnanny-risky-op";
  s.file = file;
  s.line = line;
  s.expression = "torch::exp(x)";
  s.aten_ops = std::move(ops);
  s.risk = risk;
  s.precision = "fp32";
  return s;
}

// A file of the same name in another folder is another file: matched by base name, the site in
// enc/layers.cpp was confirmed by an overflow in dec/layers.cpp. A relative path on either side
// matches the folders it names.
TEST(SiteVerifier, FilesOfOneNameInTwoFoldersAreTwoFiles) {
  SiteVerifier verifier({site("/proj/enc/layers.cpp", 6, "overflow", {"aten::exp"}),
                         site("src/model.cpp", 9, "overflow", {"aten::exp"})},
                        Precision::FP16);
  EXPECT_EQ(verifier.match("/proj/enc/layers.cpp", 6, "aten::exp"), std::optional<size_t>(0));
  EXPECT_FALSE(verifier.match("/proj/dec/layers.cpp", 6, "aten::exp").has_value());
  EXPECT_EQ(verifier.match("enc/layers.cpp", 6, "aten::exp"), std::optional<size_t>(0));
  EXPECT_FALSE(verifier.match("dec/layers.cpp", 6, "aten::exp").has_value());
  EXPECT_EQ(verifier.match("/home/me/proj/src/model.cpp", 9, "aten::exp"), std::optional<size_t>(1));
  EXPECT_FALSE(verifier.match("/home/me/proj/test/model.cpp", 9, "aten::exp").has_value());
}

// Two flagged exps on one line: the observer knows the line, not the column, so an overflow on
// the line counts for both. It used to confirm the first site and leave the one that overflowed
// "never executed". A site without ops on the line (an eps) gets the line's evidence too.
TEST(SiteVerifier, SitesOnOneLineShareTheLinesEvidence) {
  Site left = site("/src/model.cpp", 16, "overflow", {"aten::exp"}), right = left, eps = left, other = left;
  left.column = 31;
  right.column = 56;
  eps.aten_ops = {};
  eps.risk = "underflow";
  other.aten_ops = {"aten::log"};
  SiteVerifier verifier({left, right, eps, other}, Precision::FP16);
  const auto index = verifier.match("/src/model.cpp", 16, "aten::exp");
  ASSERT_TRUE(index.has_value());
  verifier.observe(*index, 2, stats_with(70000, 3));
  const auto verdicts = verifier.verdicts();
  EXPECT_EQ(verdicts[0].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[1].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[2].verdict, Verdict::NotObserved) << "an eps judged on the line's values: none flush";
  EXPECT_EQ(verdicts[3].verdict, Verdict::NotReached) << "a log on the line is not an exp";
}

// An underflow risk that did not happen is told by the smallest value, not by the headroom below
// the format's max, which read "worst headroom 0.000288x" on a site it called cleared.
TEST(SiteVerifier, AnUnderflowSiteNotObservedStatesItsSmallestValue) {
  SiteVerifier verifier({site("/src/model.cpp", 11, "underflow", {"aten::log"})}, Precision::FP16);
  TensorStats huge_but_not_small = stats_with(2.27e8);
  huge_but_not_small.min_abs_nonzero = 0.5;
  verifier.observe(0, 4, huge_but_not_small);
  const auto verdict = verifier.verdicts()[0];
  EXPECT_EQ(verdict.verdict, Verdict::NotObserved);
  EXPECT_EQ(verdict.evidence, "executed 1 times, smallest non-zero |x| = 0.5 (normal from 6.10352e-05) at step 4");
}

// arange in a half dtype: positions past the last exact integer (2048 in fp16, 256 in bf16)
// collide, far below the format's largest value. 5000 positions confirm the fp16 site; 1000 do
// not, in fp16, and do confirm the bf16 one.
TEST(SiteVerifier, AnArangeSiteIsJudgedByTheLastExactInteger) {
  const Site positions = site("/src/model.cpp", 20, "precision-loss", {"aten::arange"});
  SiteVerifier fp16({positions, site("/src/model.cpp", 30, "precision-loss", {"aten::arange"})}, Precision::FP16);
  fp16.observe(0, 1, stats_with(4999.0));
  fp16.observe(1, 1, stats_with(999.0));
  const auto verdicts = fp16.verdicts();
  EXPECT_EQ(verdicts[0].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[0].evidence, "positions up to 4999 > 2048 (fp16's last exact integer) at step 1");
  EXPECT_EQ(verdicts[1].verdict, Verdict::NotObserved);
  SiteVerifier bf16({positions}, Precision::BF16);
  bf16.observe(0, 1, stats_with(999.0));
  EXPECT_EQ(bf16.verdicts()[0].verdict, Verdict::Confirmed);
}

// log(softmax(x)): the log's output (-23 for 1e-10) is unremarkable; its argument, a probability
// fp16 flushes to 0, is the hazard. The site read NOT_OBSERVED on a run whose softmax flushed 6.
TEST(SiteVerifier, ALogSiteIsJudgedOnItsArgumentToo) {
  EXPECT_TRUE(SiteVerifier::judges_argument("aten::log"));
  EXPECT_FALSE(SiteVerifier::judges_argument("aten::exp"));
  SiteVerifier verifier({site("/src/model.cpp", 11, "underflow", {"aten::log"}),
                         site("/src/model.cpp", 12, "underflow", {"aten::log"}),
                         site("/src/model.cpp", 11, "overflow", {"aten::log"})},
                        Precision::FP16);
  TensorStats log_output = stats_with(23.0);
  TensorStats tiny_probabilities = stats_with(1.0, 0, 0, 6);
  tiny_probabilities.min_abs_nonzero = 7.3e-11;
  verifier.observe(0, 3, log_output);
  verifier.observe_argument(0, 3, tiny_probabilities);
  verifier.observe(1, 3, log_output);
  verifier.observe_argument(1, 3, stats_with(1.0));
  const auto verdicts = verifier.verdicts();
  EXPECT_EQ(verdicts[0].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[0].evidence, "6 values of its argument flush to 0 in fp16 (min |x| = 7.3e-11) at step 3");
  EXPECT_EQ(verdicts[1].verdict, Verdict::NotObserved);
  EXPECT_EQ(verdicts[2].verdict, Verdict::NotObserved) << "an overflow risk is not judged on the argument";
}

TEST(SiteVerifier, VerdictsFromObservations) {
  SiteVerifier verifier({site("/src/model.cpp", 10, "overflow", {"aten::exp"}),
                         site("/src/model.cpp", 20, "overflow", {"aten::exp"}),
                         site("/src/model.cpp", 30, "overflow", {"aten::exp"}),
                         site("/src/model.cpp", 40, "overflow", {"aten::exp"}),
                         site("/src/model.cpp", 50, "underflow"), site("/src/model.cpp", 60, "domain")},
                        Precision::FP16);
  // Matched by line and op; a path that is the scan's once normalized is the scan's.
  ASSERT_EQ(verifier.match("/build/../src/model.cpp", 10, "aten::exp"), std::optional<size_t>(0));
  EXPECT_FALSE(verifier.match("/src/model.cpp", 10, "aten::log").has_value());
  EXPECT_FALSE(verifier.match("/src/other.cpp", 10, "aten::exp").has_value());
  EXPECT_EQ(verifier.match("/src/model.cpp", 50, "aten::anything"), std::optional<size_t>(4));

  for (int64_t step = 0; step < 40; ++step) {
    verifier.observe(0, step, stats_with(step == 37 ? 72013 : 100, step == 37 ? 1 : 0));
    verifier.observe(1, step, stats_with(40000));
    verifier.observe(2, step, stats_with(step == 5 ? 8000 : 10));
    verifier.observe(4, step, stats_with(1, 0, 0, step == 3 ? 2 : 0));
    verifier.observe(5, step, stats_with(1, 0, step == 9 ? 1 : 0));
  }
  const auto verdicts = verifier.verdicts();
  ASSERT_EQ(verdicts.size(), 6u);
  EXPECT_EQ(verdicts[0].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[0].step, 37);
  EXPECT_EQ(verdicts[0].evidence, "max |x| = 72013 > 65504 (fp16 max) at step 37");
  EXPECT_EQ(verdicts[0].value, std::optional<double>(72013));
  EXPECT_EQ(verdicts[0].steps_observed, 40);
  EXPECT_EQ(verdicts[1].verdict, Verdict::AtRisk);
  EXPECT_EQ(verdicts[1].step, 0);
  EXPECT_EQ(verdicts[2].verdict, Verdict::NotObserved);
  EXPECT_EQ(verdicts[2].executions, 40);
  EXPECT_EQ(verdicts[2].evidence, "executed 40 times, worst headroom 8.188x at step 5");
  ASSERT_TRUE(verdicts[2].worst_headroom.has_value());
  EXPECT_DOUBLE_EQ(*verdicts[2].worst_headroom, 65504.0 / 8000.0);
  EXPECT_FALSE(verdicts[2].value.has_value());
  EXPECT_EQ(verdicts[3].verdict, Verdict::NotReached);
  EXPECT_EQ(verdicts[3].steps_observed, 0);
  EXPECT_FALSE(verdicts[3].worst_headroom.has_value());
  EXPECT_EQ(verdicts[4].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[4].step, 3);
  EXPECT_EQ(verdicts[5].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[5].step, 9);
  EXPECT_EQ(verdicts[5].worst_headroom, std::optional<double>(0.0));  // NaN leaves no headroom
  const std::string table = SiteVerifier::format_table(verdicts);
  EXPECT_NE(table.find("CONFIRMED    model.cpp:10"), std::string::npos) << table;
  EXPECT_NE(table.find("NOT_REACHED  model.cpp:40"), std::string::npos) << table;
}

// Values computed in fp16 itself (LibTorch 2.x on the CPU, or a GPU) are what fp16 did, not a
// prediction from fp32 headroom: their evidence says so. An op that raised on an fp16 tensor with a
// literal beyond fp16's range (masked_fill(-1e9)) is the overflow itself; one within range is not.
TEST(SiteVerifier, EvidenceComputedInTheFormatSaysObserved) {
  SiteVerifier verifier({site("/src/model.cpp", 10, "overflow", {"aten::exp"}),
                         site("/src/model.cpp", 20, "overflow", {"aten::exp"}),
                         site("/src/model.cpp", 30, "overflow", {"aten::masked_fill"}),
                         site("/src/model.cpp", 40, "overflow", {"aten::masked_fill"})},
                        Precision::FP16);
  TensorStats inf = stats_with(std::numeric_limits<double>::infinity());
  inf.inf_count = 2;
  verifier.observe(0, 1, inf, c10::ScalarType::Half);
  verifier.observe(1, 1, inf);  // fp32 values: the same count, no claim about fp16
  verifier.observe_failure(2, 0, "aten::masked_fill", c10::ScalarType::Half, -1e9);
  verifier.observe_failure(3, 0, "aten::masked_fill", c10::ScalarType::Half, -100.0);
  const auto verdicts = verifier.verdicts();
  ASSERT_EQ(verdicts.size(), 4u);
  EXPECT_EQ(verdicts[0].evidence, "observed in fp16: 0 NaN, 2 Inf at step 1");
  EXPECT_EQ(verdicts[1].evidence, "0 NaN, 2 Inf at step 1");
  EXPECT_EQ(verdicts[2].verdict, Verdict::Confirmed);
  EXPECT_EQ(verdicts[2].value, std::optional<double>(1e9));
  EXPECT_EQ(verdicts[2].evidence,
            "observed in fp16: aten::masked_fill raised on a tensor in fp16, its value -1e+09 being beyond 65504 "
            "(fp16 max) at step 0");
  EXPECT_EQ(verdicts[3].verdict, Verdict::NotReached) << verdicts[3].evidence;
}

TEST(SiteVerifier, StepsObservedCountsStepsNotExecutions) {
  SiteVerifier verifier({site("/src/model.cpp", 10, "overflow", {"aten::softmax", "aten::_softmax"})}, Precision::FP16);
  for (int64_t step = 0; step < 3; ++step) {
    verifier.observe(0, step, stats_with(1));  // forward
    verifier.observe(0, step, stats_with(2));  // its backward, same step
  }
  const auto verdicts = verifier.verdicts();
  EXPECT_EQ(verdicts[0].executions, 6);
  EXPECT_EQ(verdicts[0].steps_observed, 3);
}

TEST(SiteVerifier, TheOpsToObserveComeFromTheSites) {
  SiteVerifier named({site("/a.cpp", 1, "overflow", {"aten::exp"}), site("/a.cpp", 2, "overflow", {"aten::exp", "aten::erf"})},
                     Precision::FP16);
  EXPECT_EQ(named.watched_ops(), (std::vector<std::string>{"aten::exp", "aten::erf"}));
  EXPECT_TRUE(named.any_site_watches("aten::erf"));
  EXPECT_FALSE(named.any_site_watches("aten::log"));
  // A site that names no op takes any op at its line.
  SiteVerifier unnamed({site("/a.cpp", 1, "underflow")}, Precision::FP16);
  EXPECT_TRUE(unnamed.any_site_watches("aten::log"));
  // Never matched: the evidence says that only ops called from its line could have counted.
  EXPECT_EQ(unnamed.verdicts()[0].evidence, "never ran on an observed step (no op called from this line)");
  EXPECT_EQ(named.verdicts()[0].evidence, "never ran on an observed step");
}

TEST(SiteVerifier, MissingMalformedAndStaleSitesFilesWarnOnce) {
  test::ScratchDir dir;
  const SitesFile missing = load_sites(dir.file("nope.json"));
  EXPECT_TRUE(missing.sites.empty());
  EXPECT_NE(missing.warning.find("cannot read the sites file"), std::string::npos);
  {
    // A relative path is named as the absolute one it was read as.
    const std::string here = std::filesystem::current_path().string();
    std::filesystem::current_path(dir.path());
    const SitesFile relative = load_sites("nope.json");
    std::filesystem::current_path(here);
    EXPECT_NE(relative.warning.find("cannot read the sites file " + dir.file("nope.json") + ";"), std::string::npos)
        << relative.warning;
  }

  std::ofstream(dir.file("bad.json")) << "{\"schema_version\": 1, \"sites\": [ {\"id\": ";
  const SitesFile malformed = load_sites(dir.file("bad.json"));
  EXPECT_TRUE(malformed.sites.empty());
  EXPECT_NE(malformed.warning.find("malformed sites file"), std::string::npos);

  std::ofstream(dir.file("model.cpp")) << "int a;\n  auto y = torch::exp( x );\nint b;\n";
  std::ofstream(dir.file("sites.json"))
      << "{\"schema_version\": 1, \"generated_by\": \"test\", \"sites\": ["
      << "{\"id\": \"a\", \"check\": \"c\", \"file\": \"" << dir.file("model.cpp")
      << "\", \"line\": 2, \"column\": 12, \"function\": \"f\", \"expression\": \"torch::exp(x)\","
      << " \"aten_ops\": [\"aten::exp\"], \"risk\": \"overflow\", \"precision\": \"fp16\"},"
      << "{\"id\": \"b\", \"check\": \"c\", \"file\": \"" << dir.file("model.cpp")
      << "\", \"line\": 3, \"expression\": \"torch::log(p)\", \"risk\": \"domain\"}]}";
  const SitesFile loaded = load_sites(dir.file("sites.json"));
  ASSERT_EQ(loaded.sites.size(), 1u);
  EXPECT_EQ(loaded.sites[0].aten_ops, std::vector<std::string>{"aten::exp"});
  EXPECT_EQ(loaded.sites[0].precision, "fp16");
  EXPECT_NE(loaded.warning.find("1 site(s)"), std::string::npos) << loaded.warning;
  EXPECT_NE(loaded.warning.find("model.cpp:3"), std::string::npos) << loaded.warning;

  std::ofstream(dir.file("v2.json")) << "{\"schema_version\": 2, \"sites\": []}";
  EXPECT_NE(load_sites(dir.file("v2.json")).warning.find("schema_version 2"), std::string::npos);
}

// Found by fuzz_sites: a site naming /dev/zero was read for its "source line" until memory ran out
// (a FIFO would block the training forever). Only regular files are compared; others are kept.
TEST(SiteVerifier, ASourceThatIsNotARegularFileIsNotRead) {
  test::ScratchDir dir;
  std::ofstream(dir.file("sites.json"))
      << "{\"schema_version\": 1, \"sites\": [{\"id\": \"a\", \"file\": \"/dev/zero\", \"line\": 2, "
         "\"expression\": \"torch::exp(x)\"}]}";
  const SitesFile loaded = load_sites(dir.file("sites.json"));
  EXPECT_EQ(loaded.sites.size(), 1u);
  EXPECT_TRUE(loaded.warning.empty()) << loaded.warning;
}

}  // namespace
}  // namespace mpnanny
