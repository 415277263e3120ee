#include "BackwardHooks.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include "MaskedFpExceptions.h"
#include "NannyImpl.h"

namespace mpnanny {

namespace {

/// Observes, when a backward node of an observed forward op has run, the gradients it passes to
/// the op's inputs.
class BackwardObservation final : public torch::autograd::FunctionPostHook {
 public:
  BackwardObservation(std::shared_ptr<HookTarget> target, ObservedOp op, std::vector<uint32_t> to_inputs)
      : target_(std::move(target)), op_(std::move(op)), to_inputs_(std::move(to_inputs)) {}

  torch::autograd::variable_list operator()(const torch::autograd::variable_list& gradients,
                                            const torch::autograd::variable_list&) override {
    if (Nanny::Impl* impl = target_->impl.load()) {
      const MaskedFpExceptions masked;
      try {
        impl->on_backward_gradients(op_, to_inputs_, gradients);
      } catch (...) {
        // a hook must never throw into the backward pass it watches
      }
    }
    return gradients;
  }

 private:
  std::shared_ptr<HookTarget> target_;
  ObservedOp op_;
  std::vector<uint32_t> to_inputs_;
};

}  // namespace

void BackwardHooks::hook_parameters(const torch::nn::Module& model,
                                    const std::function<bool(const std::string&)>& selected) {
  for (const auto& parameter : model.named_parameters()) {
    at::Tensor weight = parameter.value();
    if (!weight.requires_grad() || !selected(parameter.key())) continue;
    std::shared_ptr<HookTarget> target = target_;
    std::string name = parameter.key();
    const unsigned handle = weight.register_hook([target, name](const at::Tensor& gradient) {
      if (Nanny::Impl* impl = target->impl.load()) impl->on_gradient(name, gradient);
    });
    parameter_hooks_.emplace_back(weight, handle);
    hooked_parameters_.insert(weight.unsafeGetTensorImpl());
  }
}

void BackwardHooks::unhook_parameters() {
  target_->impl = nullptr;
  for (auto& [weight, handle] : parameter_hooks_) {
    try {
      weight.remove_hook(handle);
    } catch (...) {
    }
  }
  parameter_hooks_.clear();
}

void BackwardHooks::hook_backward_of(const at::Tensor& output, const ObservedOp& op) const {
  using torch::autograd::Node;
  const std::shared_ptr<Node>& root = output.grad_fn();
  // Nodes are numbered per thread in creation order, so the op's own are the ones numbered since
  // its start on this thread; the others belong to the ops that made its inputs.
  const uint64_t thread = at::RecordFunction::currentThreadId();
  const uint64_t end = at::sequence_number::peek();
  const auto made_by_op = [&](const Node* node) {
    return node && node->thread_id() == thread && node->sequence_nr() >= op.first_sequence_nr &&
           node->sequence_nr() < end;
  };
  if (!made_by_op(root.get())) return;  // the op recorded no node of its own (it returned an input)
  // A bound on the walk: a recurrent op unrolled over a long sequence creates thousands of nodes,
  // and a traced step must stay cheap.
  constexpr size_t kMaxNodesPerOp = 1024;
  std::vector<Node*> pending{root.get()};
  std::unordered_set<const Node*> seen{root.get()};
  while (!pending.empty()) {
    Node* node = pending.back();
    pending.pop_back();
    std::vector<uint32_t> to_inputs;
    const auto& edges = node->next_edges();
    for (uint32_t index = 0; index < edges.size(); ++index) {
      Node* next = edges[index].function.get();
      if (!next) continue;  // an input that needs no gradient
      if (!made_by_op(next)) {
        if (reaches_hooked_parameter(next)) continue;  // the parameter pass observes its gradient
        to_inputs.push_back(index);
      } else if (seen.size() < kMaxNodesPerOp && seen.insert(next).second) {
        pending.push_back(next);
      }
    }
    if (!to_inputs.empty()) {
      ObservedOp backward;
      backward.phase = Phase::Backward;
      backward.op_index = op.op_index;
      backward.location_id = op.location_id;
      backward.site = op.site;
      node->add_post_hook(std::make_unique<BackwardObservation>(target_, std::move(backward), std::move(to_inputs)));
    }
  }
}

bool BackwardHooks::reaches_hooked_parameter(const torch::autograd::Node* node) const {
  // Backward nodes of ops that only rearrange a tensor's elements: the gradient they receive is
  // their input's gradient, element for element. at::linear's weight.t() is the common one.
  static const std::unordered_set<std::string> kRearranging = {
      "TBackward0",          "TransposeBackward0",    "PermuteBackward0", "ViewBackward0",
      "UnsafeViewBackward0", "ReshapeAliasBackward0", "AliasBackward0",   "SqueezeBackward0",
      "SqueezeBackward1",    "UnsqueezeBackward0"};
  // A short chain: a parameter is rarely rearranged more than once or twice before use.
  for (int depth = 0; node && depth < 4; ++depth) {
    if (const auto* accumulate = dynamic_cast<const torch::autograd::AccumulateGrad*>(node)) {
      return hooked_parameters_.count(accumulate->variable.unsafeGetTensorImpl()) > 0;
    }
    if (node->next_edges().size() != 1 || kRearranging.count(node->name()) == 0) return false;
    node = node->next_edges()[0].function.get();
  }
  return false;
}

}  // namespace mpnanny
