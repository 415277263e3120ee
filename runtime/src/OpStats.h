// The statistics of one observed op tensor, passed from the observer to the verifier and the alert
// policy, so that each tensor an op touches is read at most once however many of them ask.
#ifndef MPNANNY_RUNTIME_OPSTATS_H
#define MPNANNY_RUNTIME_OPSTATS_H

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "mpnanny/TensorStats.h"

namespace mpnanny {

/// An op's output (or a gradient a backward node passes on), read at once, and the op's inputs,
/// each read the first time a rule or a site asks for it and then kept: most ops never need them.
class OpStats {
 public:
  /// `inputs` must outlive this object.
  OpStats(const at::Tensor& tensor, const std::vector<at::Tensor>& inputs)
      : tensor_(compute_tensor_stats(tensor)), dtype_(tensor.scalar_type()), inputs_(inputs) {}
  OpStats(const OpStats&) = delete;
  OpStats& operator=(const OpStats&) = delete;

  const TensorStats& tensor() const { return tensor_; }
  c10::ScalarType dtype() const { return dtype_; }
  size_t input_count() const { return inputs_.size(); }
  const TensorStats& input(size_t index) {
    if (input_stats_.empty()) input_stats_.resize(inputs_.size());
    std::optional<TensorStats>& stats = input_stats_[index];
    if (!stats) stats = compute_tensor_stats(inputs_[index]);
    return *stats;
  }

 private:
  TensorStats tensor_;
  c10::ScalarType dtype_;
  const std::vector<at::Tensor>& inputs_;
  std::vector<std::optional<TensorStats>> input_stats_;  // by input, once read
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_OPSTATS_H
