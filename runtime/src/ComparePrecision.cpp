#include "mpnanny/ComparePrecision.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>
#include <sqlite3.h>
#include <torch/version.h>

#include <cmath>
#include <filesystem>
#include <iostream>

namespace mpnanny {

namespace {

at::ScalarType dtype_of(Precision precision) { return precision == Precision::BF16 ? at::kBFloat16 : at::kHalf; }

/// Autocast state for one device, saved and restored around the low pass (it is per thread and
/// the user may have set it). The API was renamed in PyTorch 2.4 (KNOWLEDGE.md).
class AutocastScope {
 public:
  AutocastScope(at::DeviceType device, at::ScalarType dtype) : device_(device) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    was_enabled_ = at::autocast::is_autocast_enabled(device_);
    old_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::set_autocast_enabled(device_, true);
#else
    if (device_ == at::kCUDA) {
      was_enabled_ = at::autocast::is_enabled();
      old_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(true);
    } else {
      was_enabled_ = at::autocast::is_cpu_enabled();
      old_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(true);
    }
#endif
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    // Cast weights are cached per TensorImpl without a version check: drop them so a later
    // autocast region does not reuse this pass's copies (KNOWLEDGE.md, autocast weight cache).
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, old_dtype_);
#else
    if (device_ == at::kCUDA) {
      at::autocast::set_enabled(was_enabled_);
      at::autocast::set_autocast_gpu_dtype(old_dtype_);
    } else {
      at::autocast::set_cpu_enabled(was_enabled_);
      at::autocast::set_autocast_cpu_dtype(old_dtype_);
    }
#endif
  }

 private:
  at::DeviceType device_;
  bool was_enabled_ = false;
  at::ScalarType old_dtype_ = at::kFloat;
};

/// Switches floating parameters and buffers to `dtype` with set_data (what Module::to does) and
/// puts the very same fp32 tensors back on destruction, so the model comes back bit for bit.
class ConvertedModel {
 public:
  ConvertedModel(torch::nn::Module& model, at::ScalarType dtype) {
    at::NoGradGuard no_grad;
    for (auto& parameter : model.parameters(/*recurse=*/true)) convert(parameter, dtype);
    for (auto& buffer : model.buffers(/*recurse=*/true)) convert(buffer, dtype);
  }
  ~ConvertedModel() {
    at::NoGradGuard no_grad;
    for (auto& [tensor, original] : saved_) tensor.set_data(original);
  }

 private:
  void convert(at::Tensor& tensor, at::ScalarType dtype) {
    if (!tensor.defined() || !tensor.is_floating_point() || tensor.scalar_type() == dtype) return;
    saved_.emplace_back(tensor, tensor.data());
    tensor.set_data(tensor.data().to(dtype));
  }
  std::vector<std::pair<at::Tensor, at::Tensor>> saved_;
};

/// Gradients as the user left them; each pass starts from none and they are put back after.
class SavedGradients {
 public:
  explicit SavedGradients(torch::nn::Module& model) : parameters_(model.parameters(true)) {
    for (auto& parameter : parameters_) saved_.push_back(parameter.grad());
  }
  void clear() {
    for (auto& parameter : parameters_) parameter.mutable_grad() = at::Tensor();
  }
  ~SavedGradients() {
    for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].mutable_grad() = saved_[i];
  }

 private:
  std::vector<at::Tensor> parameters_;
  std::vector<at::Tensor> saved_;
};

/// The run a Nanny just closed is the newest in its file.
std::string spec_of(const std::string& path) {
  sqlite3* db = nullptr;
  std::string spec = path;
  // The writer has closed the file (WAL checkpointed): immutable reads it without leaving
  // -wal/-shm files behind.
  const std::string uri = "file:" + path + "?mode=ro&immutable=1";
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) == SQLITE_OK) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT MAX(run_id) FROM runs", -1, &statement, nullptr) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_type(statement, 0) != SQLITE_NULL) {
      spec += "#" + std::to_string(sqlite3_column_int64(statement, 0));
    }
    sqlite3_finalize(statement);
  }
  sqlite3_close(db);
  return spec;
}

at::Tensor default_loss(const at::Tensor& output) { return output.to(at::kFloat).pow(2).mean(); }

}  // namespace

PrecisionComparison compare_precision(const std::shared_ptr<torch::nn::Module>& model,
                                      const std::function<at::Tensor(const std::vector<at::Tensor>&)>& forward,
                                      const std::vector<at::Tensor>& batch, Precision precision,
                                      PrecisionCompareOptions options) {
  PrecisionComparison result;
  result.precision = precision;
  const auto loss_of = options.loss ? options.loss : default_loss;
  const at::ScalarType low = dtype_of(precision);
  at::DeviceType device = at::kCPU;
  for (const auto& parameter : model->parameters()) {
    device = parameter.device().type();
    break;
  }
  const bool autocast = device == at::kCUDA || (device == at::kCPU && precision == Precision::BF16);
  result.low_mode = autocast ? (device == at::kCUDA ? "autocast-cuda" : "autocast-cpu") : "converted";

  const bool was_training = model->is_training();
  model->eval();  // the same function twice: no dropout, running statistics untouched
  SavedGradients gradients(*model);
  c10::AutoGradMode grad_mode(true);  // the nanny watches ops run with gradients on

  const auto pass = [&](const std::string& subdirectory, bool low_precision) -> std::pair<std::string, double> {
    Options nanny_options = options.nanny;
    nanny_options.output_dir = (std::filesystem::path(options.output_dir) / subdirectory).string();
    nanny_options.trace_interval = 1;
    nanny_options.precision = precision;
    gradients.clear();
    Nanny nanny(model, nanny_options);
    double loss_value = NAN;
    {
      auto step = nanny.step(0);
      std::vector<at::Tensor> inputs = batch;
      std::unique_ptr<AutocastScope> autocast_scope;
      std::unique_ptr<ConvertedModel> converted;
      if (low_precision && autocast) autocast_scope = std::make_unique<AutocastScope>(device, low);
      if (low_precision && !autocast) {
        converted = std::make_unique<ConvertedModel>(*model, low);
        for (auto& input : inputs) {
          if (input.defined() && input.is_floating_point()) input = input.to(low);
        }
      }
      const at::Tensor loss = loss_of(forward(inputs));
      loss_value = loss.detach().to(at::kDouble).item<double>();
      nanny.record_scalar("loss", loss_value);
      if (options.backward) loss.backward();
    }
    nanny.close();
    const std::string path = nanny.database_path();
    return {path.empty() ? std::string() : spec_of(path), loss_value};
  };

  try {
    std::tie(result.reference_db, result.reference_loss) = pass(vocab::name(vocab::Format::FP32), false);
  } catch (const std::exception& error) {
    result.error = std::string("the fp32 pass failed: ") + error.what();
    model->train(was_training);
    return result;
  }
  try {
    std::tie(result.low_db, result.low_loss) = pass(to_string(precision), true);
    result.low_ran = true;
    result.loss_relative_difference =
        std::fabs(result.low_loss - result.reference_loss) / std::max(std::fabs(result.reference_loss), options.floor);
  } catch (const std::exception& error) {
    // LibTorch 1.13 has no fp16 matmul on the CPU: the fp32 pass, judged against fp16 by
    // headroom, is still the answer there.
    result.error = std::string("the ") + to_string(precision) + " pass failed: " + error.what();
    const auto newline = result.error.find('\n');
    if (newline != std::string::npos) result.error.resize(newline);
    std::cerr << "mpnanny: warning: compare_precision: " << result.error << "\n";
  }
  model->train(was_training);
  return result;
}

}  // namespace mpnanny
