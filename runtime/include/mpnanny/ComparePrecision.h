// mpnanny::compare_precision: the FP32 versus FP16/BF16 comparison without a second training run.
//
//   auto result = mpnanny::compare_precision(model, batch, mpnanny::Precision::BF16);
//   // then: mpnanny compare <result.reference_db> <result.low_db> -o compare.html
//
// One forward (and backward) pass in fp32 and one in the low precision, each traced by a Nanny
// into its own database. The low pass uses autocast where the device has it for that format
// (CUDA: fp16 and bf16; CPU: bf16), else the model's parameters and buffers are switched to the
// low dtype for the pass and switched back after it, bit for bit. The model's train/eval mode and
// its gradients are restored; both passes run in eval mode so dropout does not differ.
#ifndef MPNANNY_COMPAREPRECISION_H
#define MPNANNY_COMPAREPRECISION_H

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "mpnanny/Nanny.h"

namespace mpnanny {

struct PrecisionCompareOptions {
  /// Databases go to <output_dir>/fp32/ and <output_dir>/bf16/ (or fp16/).
  std::string output_dir = "nanny_compare";
  /// Run backward too, so gradients are compared.
  bool backward = true;
  /// Turns the model's output into the scalar backward starts from; default: mean of the
  /// squared output, in fp32.
  std::function<at::Tensor(const at::Tensor& output)> loss;
  /// Base options for the two nannies (thresholds, watched ops); trace_interval, output_dir and
  /// precision are set by compare_precision.
  Options nanny;
  /// Floor on the denominator of the loss's relative difference.
  double floor = 1e-6;
};

struct PrecisionComparison {
  /// Database specs for `mpnanny compare`: a file, with `#<run>` appended so the exact run is
  /// read even when both passes share a file (MPNANNY_DIR set).
  std::string reference_db;
  std::string low_db;
  Precision precision = Precision::BF16;
  /// How the low pass ran: "autocast-cuda", "autocast-cpu" or "converted".
  std::string low_mode;
  /// False when the low pass could not run (e.g. fp16 matmul on a CPU with LibTorch 1.13);
  /// `error` says why. The fp32 pass is still recorded and judged against `precision`.
  bool low_ran = false;
  std::string error;
  double reference_loss = 0.0;
  double low_loss = 0.0;
  /// |low - ref| / max(|ref|, floor).
  double loss_relative_difference = 0.0;
};

/// `forward` maps the batch to the model's output.
PrecisionComparison compare_precision(const std::shared_ptr<torch::nn::Module>& model,
                                      const std::function<at::Tensor(const std::vector<at::Tensor>&)>& forward,
                                      const std::vector<at::Tensor>& batch, Precision precision,
                                      PrecisionCompareOptions options = {});

/// For a module whose forward takes one tensor.
template <typename ModuleType>
PrecisionComparison compare_precision(const torch::nn::ModuleHolder<ModuleType>& model, const at::Tensor& batch,
                                      Precision precision, PrecisionCompareOptions options = {}) {
  auto module = model.ptr();
  return compare_precision(
      std::static_pointer_cast<torch::nn::Module>(module),
      [module](const std::vector<at::Tensor>& inputs) { return module->forward(inputs.at(0)); }, {batch}, precision,
      std::move(options));
}

}  // namespace mpnanny

#endif  // MPNANNY_COMPAREPRECISION_H
