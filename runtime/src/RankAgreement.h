// Data parallelism: on every traced step the ranks of a c10d process group tell each other, in one
// small all-reduce, what each saw. With it every rank traces the same steps (an ERROR on one rank
// opens the dense window on all), the rank whose gradient was bad before the user's all-reduce is
// known from any rank's file, and ranks whose loss scalers disagree raise LOSS_SCALE_DIVERGED.
#ifndef MPNANNY_RUNTIME_RANKAGREEMENT_H
#define MPNANNY_RUNTIME_RANKAGREEMENT_H

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mpnanny/MetricsWriter.h"
#include "mpnanny/TensorStats.h"

namespace mpnanny {

/// How bad a gradient's values are, mildest first: a rank reports its worst (none when all are good).
using BadValue = vocab::BadValue;
/// The worst of a tensor's values: NaN, then Inf, then finite values beyond `precision`'s range.
std::optional<BadValue> worst_value(const TensorStats& stats, Precision precision);

/// What one rank saw on a traced step.
struct RankReport {
  bool error = false;                  ///< it raised an ERROR since the last agreement
  std::optional<BadValue> bad_before;  ///< its worst gradient before the all-reduce
  int64_t bad_parameter = -1;          ///< that gradient's parameter, by index in the model's order
  std::optional<double> loss_scale;    ///< its scaler's scale at the end of the step
  bool skipped = false;                ///< its scale went down since the last agreement: a step was skipped
};

/// Every rank's report of one step, by rank.
struct GroupView {
  std::vector<RankReport> ranks;

  bool any_error() const;
  /// Something worth a rank_agreement row: an error, a bad gradient, or a loss-scale disagreement.
  bool notable() const;
  /// The ranks' scales or skips differ: a message listing each rank's ("rank 0: scale 65536, stepped; ...").
  std::optional<std::string> loss_scale_divergence() const;
  /// The rows every rank stores for a notable step; `parameter_names` are the model's, in order.
  std::vector<RankAgreementRecord> records(int64_t step, const std::vector<std::string>& parameter_names) const;
};

/// The user's group, used for one all-reduce per traced step. Its collectives are issued at the
/// same point of every rank's step (the end of a step every rank agreed to trace), so they keep
/// the group's order with the user's own collectives.
class RankAgreement {
 public:
  explicit RankAgreement(c10::intrusive_ptr<c10d::ProcessGroup> group);
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Blocks until every rank has reported; throws what c10d throws (a rank died, a timeout).
  GroupView exchange(const RankReport& mine);

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  int rank_;
  int size_;
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_RANKAGREEMENT_H
