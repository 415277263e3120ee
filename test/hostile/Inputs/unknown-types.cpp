// Names the types of a library whose headers are missing (TensorRT's nvinfer1): error recovery
// leaves the initializer of field_name with no type at all, and reading past the errors must
// not ask for a type that is not there. Exit code 3, no crash.
#include <torch/torch.h>
#include <string>
namespace nvinfer1 {}

torch::Tensor head(torch::Tensor x) {
  return torch::log(torch::softmax(x.to(torch::kHalf), 1)); // HOSTILE-FINDING
}

torch::Tensor named(const nvinfer1::PluginFieldCollection *fc, torch::Tensor x) {
  if (x.dim() == nvinfer1::TensorRTPhase::kBUILD) {
    std::string field_name(fc->fields[0].name);
  }
  return x.to(torch::kHalf);
}
