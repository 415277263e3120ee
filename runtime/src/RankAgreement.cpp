#include "RankAgreement.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace mpnanny {

namespace {

// One rank's report travels as these doubles at its own offset of a zero vector; a SUM
// all-reduce then gives every rank every report.
enum Field { kError, kBadBeforePlusOne, kBadParameterPlusOne, kHasLossScale, kLossScale, kSkipped, kFields };

// 0 for a good gradient, else 1 + the value's place in the vocabulary (mildest first).
double encode(const std::optional<BadValue>& bad) {
  return bad ? static_cast<double>(static_cast<int>(*bad) + 1) : 0.0;
}

std::optional<BadValue> decode(double sent) {
  const auto& values = vocab::all<BadValue>();
  const int index = static_cast<int>(sent) - 1;
  if (index < 0 || index >= static_cast<int>(values.size())) return std::nullopt;
  return values[static_cast<size_t>(index)];
}

}  // namespace

std::optional<BadValue> worst_value(const TensorStats& stats, Precision precision) {
  if (stats.nan_count > 0) return BadValue::Nan;
  if (stats.inf_count > 0) return BadValue::Inf;
  const int64_t overflow = precision == Precision::FP16 ? stats.fp16_overflow : stats.bf16_overflow;
  if (overflow > 0) return BadValue::Overflow;
  return std::nullopt;
}

bool GroupView::any_error() const {
  return std::any_of(ranks.begin(), ranks.end(), [](const RankReport& rank) { return rank.error; });
}

bool GroupView::notable() const {
  return any_error() || loss_scale_divergence() ||
         std::any_of(ranks.begin(), ranks.end(), [](const RankReport& rank) { return rank.bad_before.has_value(); });
}

std::optional<std::string> GroupView::loss_scale_divergence() const {
  if (ranks.empty()) return std::nullopt;
  const RankReport& first = ranks.front();
  const bool all_agree = std::all_of(ranks.begin(), ranks.end(), [&](const RankReport& rank) {
    return rank.loss_scale.has_value() == first.loss_scale.has_value() &&
           (!rank.loss_scale || *rank.loss_scale == *first.loss_scale) && rank.skipped == first.skipped;
  });
  if (all_agree) return std::nullopt;
  std::ostringstream message;
  message << "the ranks disagree on the loss scale or on skipping: ";
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (r) message << "; ";
    message << "rank " << r << ": ";
    if (ranks[r].loss_scale) {
      message << "scale " << *ranks[r].loss_scale << (ranks[r].skipped ? ", skipped" : ", stepped");
    } else {
      message << "no scale";
    }
  }
  return message.str();
}

std::vector<RankAgreementRecord> GroupView::records(int64_t step,
                                                    const std::vector<std::string>& parameter_names) const {
  std::vector<RankAgreementRecord> rows;
  rows.reserve(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankReport& report = ranks[r];
    RankAgreementRecord row;
    row.step = step;
    row.rank = static_cast<int>(r);
    row.error = report.error;
    if (report.bad_before) row.bad_before = vocab::name(*report.bad_before);
    if (report.bad_parameter >= 0 && static_cast<size_t>(report.bad_parameter) < parameter_names.size()) {
      row.bad_parameter = parameter_names[static_cast<size_t>(report.bad_parameter)];
    }
    row.loss_scale = report.loss_scale;
    if (report.loss_scale) row.skipped = report.skipped;
    rows.push_back(std::move(row));
  }
  return rows;
}

RankAgreement::RankAgreement(c10::intrusive_ptr<c10d::ProcessGroup> group)
    : group_(std::move(group)), rank_(group_->getRank()), size_(group_->getSize()) {}

GroupView RankAgreement::exchange(const RankReport& mine) {
  // The nanny's own tensors are not the model's ops.
  at::RecordFunctionGuard no_observation(false);
  std::vector<double> values(static_cast<size_t>(size_) * kFields, 0.0);
  double* slot = values.data() + static_cast<size_t>(rank_) * kFields;
  slot[kError] = mine.error ? 1.0 : 0.0;
  slot[kBadBeforePlusOne] = encode(mine.bad_before);
  slot[kBadParameterPlusOne] = static_cast<double>(mine.bad_parameter + 1);
  slot[kHasLossScale] = mine.loss_scale ? 1.0 : 0.0;
  // A scale that is not finite would poison every slot's sum: sent as "no scale".
  if (mine.loss_scale && std::isfinite(*mine.loss_scale)) {
    slot[kLossScale] = *mine.loss_scale;
  } else {
    slot[kHasLossScale] = 0.0;
  }
  slot[kSkipped] = mine.skipped ? 1.0 : 0.0;
  std::vector<at::Tensor> tensors = {
      at::from_blob(values.data(), {static_cast<int64_t>(values.size())}, at::kDouble).clone()};
  group_->allreduce(tensors)->wait();
  const at::Tensor summed = tensors.front().contiguous();
  const double* all = summed.data_ptr<double>();
  GroupView view;
  view.ranks.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const double* theirs = all + static_cast<size_t>(r) * kFields;
    RankReport& report = view.ranks[static_cast<size_t>(r)];
    report.error = theirs[kError] != 0.0;
    report.bad_before = decode(theirs[kBadBeforePlusOne]);
    report.bad_parameter = static_cast<int64_t>(theirs[kBadParameterPlusOne]) - 1;
    if (theirs[kHasLossScale] != 0.0) report.loss_scale = theirs[kLossScale];
    report.skipped = theirs[kSkipped] != 0.0;
  }
  return view;
}

}  // namespace mpnanny
