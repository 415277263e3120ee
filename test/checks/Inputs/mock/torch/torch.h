// Mock of LibTorch's headers for the check tests: the real spellings (namespaces,
// Tensor methods, options classes with their real defaults, modules through
// ModuleHolder and TORCH_MODULE), none of the bodies. A real <torch/torch.h> costs
// ~15 s to parse; this costs milliseconds. Keep it faithful to LibTorch 1.13/2.x.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace c10 {
enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16 };
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
enum class DeviceType : int8_t { CPU, CUDA };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
struct Device {
  Device(DeviceType t, int index = -1) {}
};
struct nullopt_t {};
constexpr nullopt_t nullopt{};
template <typename T> class optional {
public:
  optional() {}
  optional(nullopt_t) {}
  optional(T v) {}
  // Constrained as c10::optional's is: an int is not an optional<ScalarType>.
  template <typename U, typename = std::enable_if_t<std::is_constructible<T, U>::value>> optional(U v) {}
};
class Scalar {
public:
  Scalar(double v) {}
  Scalar(float v) {}
  Scalar(int v) {}
  Scalar(int64_t v) {}
  Scalar(bool v) {}
};
template <typename T> class ArrayRef {
public:
  ArrayRef(std::initializer_list<T> l) {}
  ArrayRef(const std::vector<T> &v) {}
  ArrayRef(const T &v) {}
};
using IntArrayRef = ArrayRef<int64_t>;
} // namespace c10

namespace caffe2 {
class TypeMeta {};
} // namespace caffe2

namespace at {
class Tensor;
// ATen/TensorIndexing.h: what `x.index({Slice(), 0})` takes.
namespace indexing {
constexpr c10::nullopt_t None = c10::nullopt;
struct EllipsisIndexType {};
extern const EllipsisIndexType Ellipsis;
struct Slice {
  Slice(c10::optional<int64_t> start = c10::nullopt, c10::optional<int64_t> stop = c10::nullopt,
        c10::optional<int64_t> step = c10::nullopt) {}
};
struct TensorIndex {
  TensorIndex(c10::nullopt_t) {}
  TensorIndex(int64_t integer) {}
  TensorIndex(int integer) {}
  TensorIndex(Slice slice) {}
  TensorIndex(EllipsisIndexType) {}
  TensorIndex(const Tensor &tensor);
};
} // namespace indexing
using c10::ArrayRef;
using c10::Device;
using c10::IntArrayRef;
using c10::kBFloat16;
using c10::kBool;
using c10::kByte;
using c10::kCPU;
using c10::kCUDA;
using c10::kDouble;
using c10::kFloat;
using c10::kHalf;
using c10::kInt;
using c10::kLong;
using c10::nullopt;
using c10::optional;
using c10::Scalar;
using c10::ScalarType;
using DeviceType = c10::DeviceType;

struct TensorOptions {
  TensorOptions() {}
  TensorOptions(ScalarType t) {}
  TensorOptions(caffe2::TypeMeta t) {}
  TensorOptions dtype(ScalarType t) const { return *this; }
  TensorOptions device(Device d) const { return *this; }
  TensorOptions requires_grad(bool r = true) const { return *this; }
};

class TensorBase {
public:
  int64_t dim() const { return 0; }
  int64_t numel() const { return 0; }
  int64_t size(int64_t d) const { return 0; }
  ScalarType scalar_type() const { return ScalarType::Float; }
  caffe2::TypeMeta dtype() const { return {}; }
  bool defined() const { return true; }
};

class Tensor : public TensorBase {
public:
  Tensor() {}
  Tensor(const Tensor &) = default;
  Tensor &operator=(const Tensor &) = default;
  template <typename T> T item() const { return T(); }
  Tensor to(TensorOptions options = {}, bool non_blocking = false, bool copy = false) const;
  TensorOptions options() const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(const Tensor &other, bool non_blocking = false, bool copy = false) const;
  Tensor toType(ScalarType t) const;
  Tensor type_as(const Tensor &other) const;
  Tensor contiguous() const;
  Tensor detach() const;
  Tensor clone() const;
  Tensor view(IntArrayRef size) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor unsqueeze(int64_t d) const;
  Tensor squeeze(int64_t d) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  IntArrayRef sizes() const;
  Tensor operator[](int64_t i) const;
  Tensor operator~() const;
  Tensor operator-() const;
  Tensor &operator+=(const Tensor &o);
  Tensor &operator+=(const Scalar &o);
  Tensor &operator-=(const Tensor &o);
  Tensor &operator*=(const Tensor &o);
  Tensor &operator*=(const Scalar &o);
  Tensor &operator/=(const Tensor &o);
  Tensor &operator/=(const Scalar &o);
  void backward(const Tensor &gradient = {}, optional<bool> retain_graph = nullopt,
                bool create_graph = false) const;
  Tensor grad() const;
  Tensor &requires_grad_(bool r = true);
  // Ops, with the signatures of ATen's TensorBody.h.
  Tensor softmax(int64_t dim, optional<ScalarType> dtype = nullopt) const;
  Tensor log_softmax(int64_t dim, optional<ScalarType> dtype = nullopt) const;
  Tensor exp() const;
  Tensor &exp_();
  Tensor expm1() const;
  Tensor log() const;
  Tensor &log_();
  Tensor log1p() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor pow(const Scalar &exponent) const;
  Tensor pow(const Tensor &exponent) const;
  Tensor &pow_(const Scalar &exponent);
  Tensor square() const;
  Tensor cosh() const;
  Tensor sinh() const;
  Tensor abs() const;
  Tensor neg() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor relu() const;
  Tensor clamp(optional<Scalar> min = nullopt, optional<Scalar> max = nullopt) const;
  Tensor clamp_min(const Scalar &min) const;
  Tensor clamp_max(const Scalar &max) const;
  Tensor &clamp_(optional<Scalar> min = nullopt, optional<Scalar> max = nullopt);
  Tensor sum(optional<ScalarType> dtype = nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, optional<ScalarType> dtype = nullopt) const;
  Tensor mean(optional<ScalarType> dtype = nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, optional<ScalarType> dtype = nullopt) const;
  Tensor cumsum(int64_t dim, optional<ScalarType> dtype = nullopt) const;
  Tensor prod(optional<ScalarType> dtype = nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, optional<ScalarType> dtype = nullopt) const;
  Tensor cumprod(int64_t dim, optional<ScalarType> dtype = nullopt) const;
  Tensor nansum(optional<IntArrayRef> dim = nullopt, bool keepdim = false,
                optional<ScalarType> dtype = nullopt) const;
  Tensor sub(const Tensor &other, const Scalar &alpha = 1) const;
  Tensor eq(const Scalar &other) const;
  Tensor ne(const Scalar &other) const;
  Tensor gt(const Scalar &other) const;
  Tensor logical_not() const;
  Tensor argmax(optional<int64_t> dim = nullopt, bool keepdim = false) const;
  Tensor var(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor std(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor norm(const Scalar &p = 2) const;
  Tensor norm(const optional<Scalar> &p, IntArrayRef dim, bool keepdim = false) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor matmul(const Tensor &other) const;
  Tensor mm(const Tensor &other) const;
  Tensor bmm(const Tensor &other) const;
  Tensor add(const Tensor &other, const Scalar &alpha = 1) const;
  Tensor add(const Scalar &other, const Scalar &alpha = 1) const;
  Tensor mul(const Tensor &other) const;
  Tensor mul(const Scalar &other) const;
  Tensor div(const Tensor &other) const;
  Tensor div(const Scalar &other) const;
  Tensor masked_fill(const Tensor &mask, const Scalar &value) const;
  Tensor &masked_fill_(const Tensor &mask, const Scalar &value);
  Tensor &fill_(const Scalar &value);
  Tensor &zero_();
  Tensor &mul_(const Scalar &other);
  Tensor &add_(const Tensor &other, const Scalar &alpha = 1);
  Tensor &sub_(const Tensor &other, const Scalar &alpha = 1);
  Tensor &mul_(const Tensor &other);
  Tensor &div_(const Tensor &other);
  Tensor &div_(const Scalar &other);
  Tensor &copy_(const Tensor &src, bool non_blocking = false);
  Tensor data() const;
  Tensor &mutable_grad() const;
  Tensor where(const Tensor &condition, const Tensor &other) const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor index_select(int64_t dim, const Tensor &index) const;
  Tensor index(std::initializer_list<at::indexing::TensorIndex> indices) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim = 0, optional<int64_t> start = nullopt, optional<int64_t> end = nullopt,
               int64_t step = 1) const;
  Tensor gather(int64_t dim, const Tensor &index, bool sparse_grad = false) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor expand(IntArrayRef size, bool implicit = false) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor t() const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  Tensor &index_add_(int64_t dim, const Tensor &index, const Tensor &source, const Scalar &alpha = 1);
  template <typename T> T *data_ptr() const { return nullptr; }
  template <typename T, std::size_t N> int accessor() const & { return 0; }
};

Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator+(const Tensor &a, const Scalar &b);
Tensor operator+(const Scalar &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Scalar &b);
Tensor operator-(const Scalar &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Scalar &b);
Tensor operator*(const Scalar &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Scalar &b);
Tensor operator/(const Scalar &a, const Tensor &b);
Tensor operator>=(const Tensor &a, const Tensor &b);
Tensor operator==(const Tensor &a, const Scalar &b);
Tensor operator==(const Tensor &a, const Tensor &b);
Tensor operator!=(const Tensor &a, const Scalar &b);
Tensor operator>(const Tensor &a, const Scalar &b);
Tensor operator<(const Tensor &a, const Scalar &b);

Tensor softmax(const Tensor &self, int64_t dim, optional<ScalarType> dtype = nullopt);
Tensor log_softmax(const Tensor &self, int64_t dim, optional<ScalarType> dtype = nullopt);
Tensor exp(const Tensor &self);
Tensor &exp_(Tensor &self);
Tensor log(const Tensor &self);
Tensor log1p(const Tensor &self);
Tensor sqrt(const Tensor &self);
Tensor rsqrt(const Tensor &self);
Tensor reciprocal(const Tensor &self);
Tensor pow(const Tensor &self, const Scalar &exponent);
Tensor pow(const Scalar &self, const Tensor &exponent);
Tensor square(const Tensor &self);
Tensor cdist(const Tensor &x1, const Tensor &x2, double p = 2,
             optional<int64_t> compute_mode = nullopt);
Tensor abs(const Tensor &self);
Tensor sigmoid(const Tensor &self);
Tensor tanh(const Tensor &self);
Tensor relu(const Tensor &self);
Tensor clamp(const Tensor &self, optional<Scalar> min = nullopt, optional<Scalar> max = nullopt);
Tensor clamp_min(const Tensor &self, const Scalar &min);
Tensor sum(const Tensor &self, optional<ScalarType> dtype = nullopt);
Tensor sum(const Tensor &self, IntArrayRef dim, bool keepdim = false, optional<ScalarType> dtype = nullopt);
Tensor mean(const Tensor &self, IntArrayRef dim, bool keepdim = false, optional<ScalarType> dtype = nullopt);
Tensor cumsum(const Tensor &self, int64_t dim, optional<ScalarType> dtype = nullopt);
Tensor cumprod(const Tensor &self, int64_t dim, optional<ScalarType> dtype = nullopt);
std::tuple<Tensor, Tensor> sort(const Tensor &self, int64_t dim = -1, bool descending = false);
Tensor mean(const Tensor &self, optional<ScalarType> dtype = nullopt);
Tensor prod(const Tensor &self, optional<ScalarType> dtype = nullopt);
Tensor var(const Tensor &self, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
Tensor batch_norm(const Tensor &input, const optional<Tensor> &weight, const optional<Tensor> &bias,
                  const optional<Tensor> &running_mean, const optional<Tensor> &running_var,
                  bool training, double momentum, double eps, bool cudnn_enabled);
Tensor l1_loss(const Tensor &self, const Tensor &target, int64_t reduction = 1);
Tensor logsumexp(const Tensor &self, IntArrayRef dim, bool keepdim = false);
Tensor matmul(const Tensor &self, const Tensor &other);
Tensor norm(const Tensor &self, const optional<Scalar> &p, IntArrayRef dim, bool keepdim = false);
Tensor linalg_vector_norm(const Tensor &self, const Scalar &ord = 2, optional<IntArrayRef> dim = nullopt,
                          bool keepdim = false, optional<ScalarType> dtype = nullopt);
Tensor mm(const Tensor &self, const Tensor &other);
Tensor bmm(const Tensor &self, const Tensor &other);
Tensor masked_fill(const Tensor &self, const Tensor &mask, const Scalar &value);
Tensor where(const Tensor &condition, const Tensor &self, const Tensor &other);
Tensor layer_norm(const Tensor &input, IntArrayRef normalized_shape, optional<Tensor> weight = nullopt,
                  optional<Tensor> bias = nullopt, double eps = 1e-05, bool cudnn_enable = true);
Tensor binary_cross_entropy(const Tensor &self, const Tensor &target, optional<Tensor> weight = nullopt,
                            int64_t reduction = 1);
namespace Reduction {
enum Reduction { None, Mean, Sum, END };
} // namespace Reduction
Tensor binary_cross_entropy_with_logits(const Tensor &self, const Tensor &target);
Tensor nll_loss(const Tensor &self, const Tensor &target, optional<Tensor> weight = nullopt,
                int64_t reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor mse_loss(const Tensor &self, const Tensor &target, int64_t reduction = 1);
Tensor cross_entropy_loss(const Tensor &self, const Tensor &target, optional<Tensor> weight = nullopt,
                          int64_t reduction = Reduction::Mean, int64_t ignore_index = -100,
                          double label_smoothing = 0.0);
Tensor ones(IntArrayRef size, TensorOptions options = {});
Tensor zeros(IntArrayRef size, TensorOptions options = {});
Tensor full(IntArrayRef size, const Scalar &fill_value, TensorOptions options = {});
Tensor randn(IntArrayRef size, TensorOptions options = {});
Tensor randint(int64_t high, IntArrayRef size, TensorOptions options = {});
Tensor arange(const Scalar &end, TensorOptions options = {});
Tensor arange(const Scalar &start, const Scalar &end, TensorOptions options = {});
Tensor arange(const Scalar &start, const Scalar &end, const Scalar &step, TensorOptions options = {});
Tensor empty(IntArrayRef size, TensorOptions options = {});
Tensor ones_like(const Tensor &self, TensorOptions options = {});
Tensor zeros_like(const Tensor &self, TensorOptions options = {});
Tensor sin(const Tensor &self);
Tensor cos(const Tensor &self);
Tensor diagonal(const Tensor &self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor gather(const Tensor &self, int64_t dim, const Tensor &index, bool sparse_grad = false);
Tensor cat(ArrayRef<Tensor> tensors, int64_t dim = 0);
Tensor stack(ArrayRef<Tensor> tensors, int64_t dim = 0);
Tensor isfinite(const Tensor &self);

namespace autocast {
bool is_enabled();
void set_enabled(bool enabled);
void clear_cache();
int increment_nesting();
int decrement_nesting();
bool is_cpu_enabled();
void set_cpu_enabled(bool enabled);
ScalarType get_autocast_gpu_dtype();
void set_autocast_gpu_dtype(ScalarType dtype);
void set_autocast_cpu_dtype(ScalarType dtype);
void set_autocast_cache_enabled(bool enabled);
ScalarType get_autocast_cpu_dtype();
// 2.4+ device-generic spellings (the names above stay, deprecated). -DMOCK_LIBTORCH_1_13 leaves
// them out, as LibTorch 1.13's <ATen/autocast_mode.h> does.
#ifndef MOCK_LIBTORCH_1_13
bool is_autocast_enabled(DeviceType device_type);
void set_autocast_enabled(DeviceType device_type, bool enabled);
ScalarType get_autocast_dtype(DeviceType device_type);
void set_autocast_dtype(DeviceType device_type, ScalarType dtype);
#endif
} // namespace autocast
} // namespace at

namespace torch {
using namespace at;
namespace indexing = at::indexing;
using Dtype = at::ScalarType;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
constexpr auto kF16 = kFloat16;
constexpr auto kF32 = kFloat32;

inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
void manual_seed(uint64_t seed);
// torch/enum.h: TORCH_ENUM_DECLARE(Sum) declares enumtype::kSum and `extern const kSum kSum`.
namespace enumtype {
struct kNone {};
struct kMean {};
struct kSum {};
struct kBatchMean {};
} // namespace enumtype
extern const enumtype::kNone kNone;
extern const enumtype::kMean kMean;
extern const enumtype::kSum kSum;
extern const enumtype::kBatchMean kBatchMean;
struct reduction_t {
  reduction_t(enumtype::kNone) {}
  reduction_t(enumtype::kMean) {}
  reduction_t(enumtype::kSum) {}
  reduction_t(enumtype::kBatchMean) {}
};
namespace cuda {
bool is_available();
}

namespace autograd {
struct NoGradGuard {
  NoGradGuard();
  ~NoGradGuard();
};
using Variable = at::Tensor;
using variable_list = std::vector<Variable>;
void backward(const variable_list &tensors, const variable_list &grad_tensors = {},
              optional<bool> retain_graph = nullopt, bool create_graph = false,
              const variable_list &inputs = {});
} // namespace autograd
using autograd::NoGradGuard;

namespace nn {
class Module {
public:
  virtual ~Module() = default;
  std::vector<Tensor> parameters(bool recurse = true) const;
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  virtual void to(ScalarType dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);
  void train(bool on = true);
  void eval();
  void zero_grad();
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module);
  template <typename ModuleType> ModuleType register_module(std::string name, ModuleType holder) {
    return holder;
  }
  Tensor &register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor &register_buffer(std::string name, Tensor tensor);
};

template <typename Contained> class ModuleHolder {
public:
  ModuleHolder() : impl_(std::make_shared<Contained>()) {}
  ModuleHolder(std::nullptr_t) : impl_(nullptr) {}
  template <typename Head, typename... Tail>
  explicit ModuleHolder(Head &&head, Tail &&...tail)
      : impl_(new Contained(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  Contained *operator->() { return impl_.get(); }
  const Contained *operator->() const { return impl_.get(); }
  Contained &operator*() { return *impl_; }
  template <typename... Args> auto operator()(Args &&...args) {
    return impl_->forward(std::forward<Args>(args)...);
  }
  const std::shared_ptr<Contained> &ptr() const { return impl_; }

protected:
  std::shared_ptr<Contained> impl_;
};

#define TORCH_MODULE_IMPL(Name, ImplType)                                                        \
  class Name : public torch::nn::ModuleHolder<ImplType> {                                        \
  public:                                                                                        \
    using torch::nn::ModuleHolder<ImplType>::ModuleHolder;                                       \
  }
#define TORCH_MODULE(Name) TORCH_MODULE_IMPL(Name, Name##Impl)

// Options: setters are TORCH_ARG(type, name): `auto name(const type &v) -> decltype(*this)`.
#define TORCH_ARG(T, name)                                                                       \
public:                                                                                          \
  inline auto name(const T &new_##name)->decltype(*this) {                                       \
    this->name##_ = new_##name;                                                                  \
    return *this;                                                                                \
  }                                                                                              \
  inline const T &name() const noexcept { return this->name##_; }                                \
                                                                                                 \
private:                                                                                         \
  T name##_

struct LinearOptions {
  LinearOptions(int64_t in, int64_t out) {}
  TORCH_ARG(bool, bias) = true;
};
struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) {}
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, elementwise_affine) = true;
};
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) {}
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(double, momentum) = 0.1;
};
struct GroupNormOptions {
  GroupNormOptions(int64_t groups, int64_t channels) {}
  TORCH_ARG(double, eps) = 1e-5;
};
struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) {}
  TORCH_ARG(int64_t, dim);
};
struct EmbeddingOptions {
  EmbeddingOptions(int64_t n, int64_t d) {}
};
struct BCELossOptions {};
struct CrossEntropyLossOptions {};

class LinearImpl : public Module {
public:
  LinearImpl(int64_t in, int64_t out) {}
  explicit LinearImpl(const LinearOptions &options) {}
  Tensor forward(const Tensor &input);
  Tensor weight, bias;
};
TORCH_MODULE(Linear);
class LayerNormImpl : public Module {
public:
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape) {}
  explicit LayerNormImpl(const LayerNormOptions &options) {}
  Tensor forward(const Tensor &input);
};
TORCH_MODULE(LayerNorm);
class BatchNorm1dImpl : public Module {
public:
  explicit BatchNorm1dImpl(int64_t num_features) {}
  explicit BatchNorm1dImpl(const BatchNormOptions &options) {}
  Tensor forward(const Tensor &input);
};
TORCH_MODULE(BatchNorm1d);
class BatchNorm2dImpl : public Module {
public:
  explicit BatchNorm2dImpl(int64_t num_features) {}
  explicit BatchNorm2dImpl(const BatchNormOptions &options) {}
  Tensor forward(const Tensor &input);
};
TORCH_MODULE(BatchNorm2d);
class SoftmaxImpl : public Module {
public:
  explicit SoftmaxImpl(int64_t dim) {}
  explicit SoftmaxImpl(const SoftmaxOptions &options) {}
  Tensor forward(const Tensor &input);
};
TORCH_MODULE(Softmax);
struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) {}
  TORCH_ARG(int64_t, dim);
};
class LogSoftmaxImpl : public Module {
public:
  explicit LogSoftmaxImpl(int64_t dim) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions &options) {}
  Tensor forward(const Tensor &input);
};
TORCH_MODULE(LogSoftmax);
class EmbeddingImpl : public Module {
public:
  EmbeddingImpl(int64_t n, int64_t d) {}
  Tensor forward(const Tensor &indices);
};
TORCH_MODULE(Embedding);
class BCELossImpl : public Module {
public:
  explicit BCELossImpl(const BCELossOptions &options = {}) {}
  Tensor forward(const Tensor &input, const Tensor &target);
};
TORCH_MODULE(BCELoss);
class CrossEntropyLossImpl : public Module {
public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions &options = {}) {}
  Tensor forward(const Tensor &input, const Tensor &target);
};
TORCH_MODULE(CrossEntropyLoss);
struct MSELossOptions {};
class MSELossImpl : public Module {
public:
  explicit MSELossImpl(const MSELossOptions &options = {}) {}
  Tensor forward(const Tensor &input, const Tensor &target);
};
TORCH_MODULE(MSELoss);
struct BCEWithLogitsLossOptions {};
class BCEWithLogitsLossImpl : public Module {
public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions &options = {}) {}
  Tensor forward(const Tensor &input, const Tensor &target);
};
TORCH_MODULE(BCEWithLogitsLoss);

namespace utils {
inline double clip_grad_norm_(std::vector<Tensor> parameters, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) { return 0; }
inline double clip_grad_norm_(std::initializer_list<Tensor> parameters, double max_norm,
                              double norm_type = 2.0, bool error_if_nonfinite = false) { return 0; }
inline double clip_grad_norm_(Tensor parameter, double max_norm, double norm_type = 2.0,
                              bool error_if_nonfinite = false) { return 0; }
inline void clip_grad_value_(std::vector<Tensor> parameters, double clip_value) {}
inline void clip_grad_value_(std::initializer_list<Tensor> parameters, double clip_value) {}
inline void clip_grad_value_(Tensor parameter, double clip_value) {}
} // namespace utils

namespace functional {
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(optional<ScalarType>, dtype) = nullopt;
};
struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(optional<ScalarType>, dtype) = nullopt;
};
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) {}
  TORCH_ARG(double, eps) = 1e-5;
};
struct NormalizeFuncOptions {
  NormalizeFuncOptions() {}
  TORCH_ARG(double, p) = 2.0;
  TORCH_ARG(int64_t, dim) = 1;
  TORCH_ARG(double, eps) = 1e-12;
};
struct BinaryCrossEntropyFuncOptions {};
struct CrossEntropyFuncOptions {
  TORCH_ARG(reduction_t, reduction) = kMean;
  TORCH_ARG(double, label_smoothing) = 0.0;
};
struct NLLLossFuncOptions {
  TORCH_ARG(reduction_t, reduction) = kMean;
};
struct L1LossFuncOptions {
  TORCH_ARG(reduction_t, reduction) = kMean;
};
inline Tensor softmax(const Tensor &input, const SoftmaxFuncOptions &options) { return input; }
inline Tensor log_softmax(const Tensor &input, const LogSoftmaxFuncOptions &options) { return input; }
inline Tensor layer_norm(const Tensor &input, const LayerNormFuncOptions &options) { return input; }
inline Tensor normalize(const Tensor &input, NormalizeFuncOptions options = {}) { return input; }
inline Tensor relu(const Tensor &input, bool inplace = false) { return input; }
inline Tensor binary_cross_entropy(const Tensor &input, const Tensor &target,
                                   const BinaryCrossEntropyFuncOptions &options = {}) { return input; }
inline Tensor cross_entropy(const Tensor &input, const Tensor &target,
                            const CrossEntropyFuncOptions &options = {}) { return input; }
inline Tensor mse_loss(const Tensor &input, const Tensor &target) { return input; }
inline Tensor nll_loss(const Tensor &input, const Tensor &target,
                       const NLLLossFuncOptions &options = {}) { return input; }
struct BinaryCrossEntropyWithLogitsFuncOptions {};
inline Tensor binary_cross_entropy_with_logits(
    const Tensor &input, const Tensor &target,
    const BinaryCrossEntropyWithLogitsFuncOptions &options = {}) { return input; }
inline Tensor l1_loss(const Tensor &input, const Tensor &target,
                      const L1LossFuncOptions &options = {}) { return input; }
struct BatchNormFuncOptions {
  TORCH_ARG(Tensor, weight) = {};
  TORCH_ARG(Tensor, bias) = {};
  TORCH_ARG(bool, training) = false;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};
inline Tensor batch_norm(const Tensor &input, const Tensor &running_mean, const Tensor &running_var,
                         const BatchNormFuncOptions &options = {}) { return input; }
} // namespace functional
} // namespace nn

namespace optim {
struct AdamOptions {
  AdamOptions(double lr = 1e-3) {}
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
};
struct AdamWOptions {
  AdamWOptions(double lr = 1e-3) {}
  TORCH_ARG(double, lr) = 1e-3;
  TORCH_ARG(double, eps) = 1e-8;
};
struct SGDOptions {
  SGDOptions(double lr) {}
  TORCH_ARG(double, momentum) = 0;
};
class OptimizerParamGroup {
public:
  OptimizerParamGroup(std::vector<Tensor> params) {}
};
class Optimizer {
public:
  void step();
  void zero_grad();
};
class Adam : public Optimizer {
public:
  Adam(std::vector<Tensor> params, AdamOptions defaults = {}) {}
  Adam(std::vector<OptimizerParamGroup> groups, AdamOptions defaults = {}) {}
};
class AdamW : public Optimizer {
public:
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {}) {}
  AdamW(std::vector<OptimizerParamGroup> groups, AdamWOptions defaults = {}) {}
};
class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, SGDOptions defaults) {}
};
struct RMSpropOptions {
  RMSpropOptions(double lr = 1e-2) {}
  TORCH_ARG(double, lr) = 1e-2;
  TORCH_ARG(double, eps) = 1e-8;
};
class RMSprop : public Optimizer {
public:
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {}) {}
};
struct AdagradOptions {
  AdagradOptions(double lr = 1e-2) {}
  TORCH_ARG(double, lr) = 1e-2;
  TORCH_ARG(double, eps) = 1e-10;
};
class Adagrad : public Optimizer {
public:
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {}) {}
};
} // namespace optim
} // namespace torch
