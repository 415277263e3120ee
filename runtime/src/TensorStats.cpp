#include "mpnanny/TensorStats.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/record_function.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "StatKernelCpu.h"

#ifdef MPNANNY_WITH_CUDA
#include "CudaStats.h"
#endif

namespace mpnanny {

double TensorStats::mean() const {
  const int64_t finite = finite_count();
  return finite > 0 ? sum / static_cast<double>(finite) : 0.0;
}

double TensorStats::norm() const { return std::sqrt(sum_squares); }

void TensorStats::merge(const TensorStats& other) {
  numel += other.numel;
  add_counts(other);
  merge_summary(other);
  for (int b = 0; b < kHistogramBuckets; ++b) histogram[b] += other.histogram[b];
}

namespace {

template <typename Scalar>
double l2_distance_of(const Scalar* a, const Scalar* b, int64_t count) {
  double sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
  for (int64_t i = 0; i < count; ++i) {
    const double difference =
        static_cast<double>(static_cast<float>(a[i])) - static_cast<double>(static_cast<float>(b[i]));
    sum_squares += difference * difference;
  }
  return std::sqrt(sum_squares);
}

template <>
double l2_distance_of<double>(const double* a, const double* b, int64_t count) {
  double sum_squares = 0;
#pragma omp simd reduction(+ : sum_squares)
  for (int64_t i = 0; i < count; ++i) sum_squares += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum_squares);
}

}  // namespace

double l2_distance(const at::Tensor& a, const at::Tensor& b) noexcept {
  try {
    at::RecordFunctionGuard no_observation(false);
    const bool direct = a.device().is_cpu() && b.device().is_cpu() && a.scalar_type() == b.scalar_type() &&
                        a.sizes() == b.sizes() && a.is_contiguous() && b.is_contiguous();
    if (direct) {
      switch (a.scalar_type()) {
        case at::kFloat: return l2_distance_of(a.data_ptr<float>(), b.data_ptr<float>(), a.numel());
        case at::kDouble: return l2_distance_of(a.data_ptr<double>(), b.data_ptr<double>(), a.numel());
        case at::kHalf: return l2_distance_of(a.data_ptr<c10::Half>(), b.data_ptr<c10::Half>(), a.numel());
        case at::kBFloat16: return l2_distance_of(a.data_ptr<c10::BFloat16>(), b.data_ptr<c10::BFloat16>(), a.numel());
        default: break;
      }
    }
    return a.dist(b).item<double>();
  } catch (...) {
    return std::numeric_limits<double>::quiet_NaN();
  }
}

bool is_observable_tensor(const at::Tensor& tensor) noexcept {
  if (!tensor.defined()) return false;
  const auto type = tensor.scalar_type();
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

TensorStats compute_tensor_stats(const at::Tensor& tensor) noexcept {
  try {
    if (!tensor.defined()) return {};
    // Reading a tensor must never show up as an observed op of its own.
    at::RecordFunctionGuard no_observation(false);
    // A sparse tensor holds its values and nothing else (its implicit zeros are not values a
    // format could round); values at one index are added first, as the tensor's arithmetic does.
    if (tensor.is_sparse()) return compute_tensor_stats(tensor.coalesce().values());
    if (tensor.layout() != at::kStrided) return {};
    // A complex number is two real ones in memory, each of which overflows or flushes on its own.
    if (tensor.is_complex()) return compute_tensor_stats(at::view_as_real(tensor.resolve_conj()));
    if (!is_observable_tensor(tensor) || tensor.numel() == 0) return {};
#ifdef MPNANNY_WITH_CUDA
    TensorStats on_device;
    if (tensor.is_cuda() && compute_tensor_stats_cuda(tensor, on_device)) return on_device;
#endif
    if (!tensor.device().is_cpu()) return compute_tensor_stats(tensor.to(at::kCPU));
    return compute_tensor_stats_cpu(tensor);
  } catch (...) {
    return {};
  }
}

}  // namespace mpnanny
