// Site verification (MPNANNY_VERIFY=1): the static findings of `mpnanny-check --export-sites`,
// confirmed or cleared by what their ATen ops produced at their source lines.
//
// This part is the sites file and the verdicts; it knows nothing of RecordFunction, so that the
// rules are testable without training. The op observer feeds it (site, step, statistics).
#ifndef MPNANNY_SITEVERIFIER_H
#define MPNANNY_SITEVERIFIER_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>

#include "mpnanny/Alert.h"
#include "mpnanny/TensorStats.h"

namespace mpnanny {

/// One entry of the sites file (tools/mpnanny-check/README.md, "The sites file").
struct Site {
  std::string id;
  std::string check;
  std::string file;
  int64_t line = 0;
  int64_t column = 0;
  std::string function;
  std::string expression;
  std::vector<std::string> aten_ops;
  std::string risk;       ///< a vocab::RiskKind's name, as the sites file spells it
  std::string precision;  ///< fp32, fp16, bf16
};

using RiskKind = vocab::RiskKind;
/// The site's risk; none for a name this runtime does not know (a newer mpnanny-check's).
inline std::optional<RiskKind> risk_of(const Site& site) { return vocab::parse<RiskKind>(site.risk); }

struct SitesFile {
  std::vector<Site> sites;
  /// Empty when the file was read cleanly; otherwise the one warning to print (a missing or
  /// malformed file gives no sites, a stale site is dropped and named).
  std::string warning;
};

/// Reads a sites file. Never throws. `check_sources`: drop sites whose source line no longer
/// holds the start of their expression (the file was edited since the scan).
SitesFile load_sites(const std::string& path, bool check_sources = true);
/// load_sites, once per path in this process: a missing, malformed or stale file gives one
/// warning (printed here) however many sessions (the implicit one, then the user's) read it.
const SitesFile& load_sites_once(const std::string& path);

using Verdict = vocab::Verdict;
inline const char* to_string(Verdict verdict) { return vocab::name(verdict); }

struct SiteVerdict {
  const Site* site = nullptr;
  Verdict verdict = Verdict::NotReached;
  int64_t executions = 0;
  int64_t steps_observed = 0;  ///< distinct steps on which the site's op ran
  int64_t step = -1;           ///< the step of the evidence (first confirmation, or worst headroom)
  /// The value that confirmed it or put it at risk (max |x|, the smallest flushed |x|, or the
  /// NaN/Inf count); empty for NOT_OBSERVED and NOT_REACHED.
  std::optional<double> value;
  /// Format max / largest |x| seen (0 once NaN/Inf was seen); empty when never executed.
  std::optional<double> worst_headroom;
  std::string evidence;  ///< e.g. "max |x| = 72013 > 65504 at step 37"
};

class SiteVerifier {
 public:
  /// `target`: the format fp32 sites are judged against (a CPU dry run of an fp16 model).
  SiteVerifier(std::vector<Site> sites, Precision target);

  /// The site an op belongs to: the same file (see same_source), same line, and the op among the
  /// site's aten_ops (or the site lists none).
  std::optional<size_t> match(const std::string& file, int64_t line, const std::string& op) const;

  /// One output of a site's op on `step`. It counts for every site on the same line that could
  /// have run the op: an op's line is all the observer knows, so two flagged ops on one line
  /// share their evidence rather than one site getting the other's.
  /// `dtype`: the output's own type. Values computed in the site's format (fp16 on LibTorch 2.x's
  /// CPU, or a GPU) are evidence "observed in fp16"; fp32 values are judged by their headroom.
  void observe(size_t site, int64_t step, const TensorStats& stats, c10::ScalarType dtype = c10::ScalarType::Float);
  /// A site's op raised on `step` instead of returning. With its input in the site's format and a
  /// scalar argument (`fill`) beyond that format's range, that is the overflow itself, observed:
  /// masked_fill(-1e9) on an fp16 tensor raises "value cannot be converted to type at::Half
  /// without overflow".
  void observe_failure(size_t site, int64_t step, const std::string& op, c10::ScalarType input_dtype, double scalar);

  /// A site on arange: its precision loss is integer positions past the format's last exact
  /// integer (2048 in fp16, 256 in bf16), not values near its largest one.
  static bool makes_integer_sequence(const Site& site);
  /// Ops whose underflow is their argument's: log of a value fp16 flushes to 0 is -inf, while
  /// the log's own output (-23 for 1e-10) is unremarkable. Their sites are judged on both.
  static bool judges_argument(const std::string& op);
  /// The first input of a site's op on `step` (for ops judges_argument names): confirms an
  /// underflow risk when values of it flush to 0 in the site's format.
  void observe_argument(size_t site, int64_t step, const TensorStats& argument);

  /// The ATen ops some site names: what the op observer must watch for the verifier.
  std::vector<std::string> watched_ops() const;
  /// True when a site names no op (every op at its line counts) or names `op`.
  bool any_site_watches(const std::string& op) const;

  std::vector<SiteVerdict> verdicts() const;
  const std::vector<Site>& sites() const { return sites_; }

  /// The table printed at exit: one row per site.
  static std::string format_table(const std::vector<SiteVerdict>& verdicts);

 private:
  struct Evidence {
    int64_t executions = 0;
    int64_t steps_observed = 0;
    int64_t last_step = -1;
    bool nonfinite = false;
    std::optional<SiteVerdict> confirmed;  // the first
    std::optional<SiteVerdict> at_risk;    // the first
    double worst_ratio = 0.0;              // max |x| / format max
    int64_t worst_step = -1;
    double smallest_nonzero = 0.0;  // for underflow risks: min non-zero |x| seen
    int64_t smallest_step = -1;
  };
  const FormatLimits& limits_for(const Site& site) const;
  void observe_one(size_t site, int64_t step, const TensorStats& stats, c10::ScalarType dtype);
  /// Fills `slot` with the site's first evidence of a kind; later evidence leaves it as it is.
  static void record_first(std::optional<SiteVerdict>& slot, const Site& site, Verdict verdict, int64_t step,
                           double value, const std::string& evidence);
  static void note_smallest(Evidence& e, double min_abs_nonzero, int64_t step);
  /// Whether a file the op observer names is the site's: the same path, or, where one of them is
  /// relative, its folders and name at the end of the other. Two absolute paths that differ are
  /// two files (base names alone took enc/layers.cpp for dec/layers.cpp), unless they are one
  /// file on disk (a link in either path).
  bool same_source(const std::string& site_file, const std::string& observed_file) const;

  std::vector<Site> sites_;
  Precision target_;
  std::vector<Evidence> evidence_;
  /// For each site, the sites on its line (itself included) whose ops overlap with its own.
  std::vector<std::vector<size_t>> line_mates_;
  mutable std::map<std::pair<std::string, std::string>, bool> same_file_cache_;
};

}  // namespace mpnanny

#endif  // MPNANNY_SITEVERIFIER_H
