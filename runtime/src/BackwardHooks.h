// The hooks a session puts into autograd: post hooks on the backward nodes of the watched forward
// ops (the backward pass is observed through them, with the op callback off), and gradient hooks
// on the model's parameters (the parameter pass reads the gradients they capture).
#ifndef MPNANNY_RUNTIME_BACKWARDHOOKS_H
#define MPNANNY_RUNTIME_BACKWARDHOOKS_H

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "OpObserver.h"

namespace torch::autograd {
struct Node;
}

namespace mpnanny {

/// What the hooks call back into: emptied when the session closes, while the hooks may live on
/// in a graph or on a parameter.
struct HookTarget {
  std::atomic<Nanny::Impl*> impl{nullptr};
};

class BackwardHooks {
 public:
  /// The session the hooks call; null: they do nothing from here on.
  void point_at(Nanny::Impl* session) { target_->impl = session; }
  const std::shared_ptr<HookTarget>& target() const { return target_; }

  /// Gradient hooks on the parameters of `model` that need a gradient and that `selected` picks:
  /// each passes its gradient, as backward produced it, to Nanny::Impl::on_gradient.
  void hook_parameters(const torch::nn::Module& model, const std::function<bool(const std::string&)>& selected);
  /// Removes the parameters' hooks and points at no session.
  void unhook_parameters();

  /// Post hooks on the autograd nodes a forward op made for `output`, for the gradients they pass
  /// to the op's inputs (to Nanny::Impl::on_backward_gradients). Gradients that go to a hooked
  /// parameter are the parameter pass's.
  void hook_backward_of(const at::Tensor& output, const ObservedOp& op) const;

 private:
  /// True where a gradient passed to `node` is a hooked parameter's gradient, possibly rearranged
  /// (transposed, viewed) on the way.
  bool reaches_hooked_parameter(const torch::autograd::Node* node) const;

  std::shared_ptr<HookTarget> target_ = std::make_shared<HookTarget>();
  std::vector<std::pair<at::Tensor, unsigned>> parameter_hooks_;
  // Set before any op runs; resume() adds only the parameters that are new since.
  std::unordered_set<const c10::TensorImpl*> hooked_parameters_;
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_BACKWARDHOOKS_H
