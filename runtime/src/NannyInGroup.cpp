// A Nanny's session in a process group (Options::process_group): what it adds to the end of a
// traced step. The exchange itself, and what the ranks' reports mean, are RankAgreement's.
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>

#include <iostream>
#include <string>
#include <vector>

#include "NannyImpl.h"
#include "mpnanny/TensorStats.h"

namespace mpnanny {

void Nanny::Impl::observe_reduced_gradients() {
  if (!model_) return;
  at::RecordFunctionGuard no_observation(false);
  c10::NoGradGuard no_grad;
  for (const auto& parameter : model_->named_parameters()) {
    if (!parameter_selected(parameter.key())) continue;
    const at::Tensor& gradient = parameter.value().grad();
    if (!gradient.defined()) continue;
    const TensorStats stats = compute_tensor_stats(gradient);
    if (stats.numel == 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    recorder_.enqueue(TensorRecord{step_, seq_++, Phase::ReducedGradient, "", parameter.key(), 0,
                                   c10::toString(gradient.scalar_type()), shape_of(gradient), stats, std::nullopt});
  }
}

void Nanny::Impl::agree_with_group(bool observed) {
  RankReport mine;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mine = report_;
    report_ = RankReport{};
  }
  GroupView view;
  try {
    view = agreement_->exchange(mine);
  } catch (const std::exception& exception) {
    // A rank is gone or the group broke: the user's own collectives fail the same way. The nanny
    // asks nothing more of the group and goes on observing this rank alone.
    agreement_.reset();
    std::cerr << "mpnanny: warning: the process group failed at step " << step_ << " (" << exception.what()
              << "); this rank's nanny goes on without the other ranks\n";
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const std::optional<std::string> divergence = view.loss_scale_divergence();
  // Scales that parted stay apart: the news, and the dense window, is the step they part.
  const bool newly_diverged = divergence && !scales_diverged_;
  scales_diverged_ = divergence.has_value();
  if (view.any_error() || newly_diverged) sampler_.on_error(step_);
  if (!observed) return;
  if (newly_diverged) {
    raise(Finding{AlertType::LossScaleDiverged, Severity::Error, mine.loss_scale.value_or(0.0), 0.0, *divergence},
          Phase::LossScale, "", "loss_scale", 0, -1);
    report_.error = false;  // the whole group raised it: not news for the next agreement
  }
  if (!view.notable()) return;
  std::vector<std::string> parameter_names;
  if (model_) {
    for (const auto& parameter : model_->named_parameters()) parameter_names.push_back(parameter.key());
  }
  for (RankAgreementRecord& row : view.records(step_, parameter_names)) recorder_.enqueue(std::move(row));
}

}  // namespace mpnanny
