// Run by tools/gpu-check.sh on a CUDA machine: the CUDA stat kernel against the CPU kernel on
// crafted tensors of every dtype (counts and extremes must agree exactly, sums to rounding), then
// the kernel's bandwidth as a share of a device-to-device copy of the same bytes.
// Exit status: 0 all agree, 1 a mismatch, 2 no usable GPU.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../src/MemoryStats.h"
#include "CudaStats.h"
#include "StatKernel.h"
#include "mpnanny/TensorStats.h"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, const std::string& detail) {
  if (ok) return;
  ++failures;
  std::printf("  MISMATCH %s: %s\n", what.c_str(), detail.c_str());
}

void compare(const at::Tensor& device_tensor, const std::string& name) {
  const at::Tensor host = device_tensor.to(at::kCPU);
  const mpnanny::TensorStats cpu = mpnanny::compute_tensor_stats(host);
  mpnanny::TensorStats gpu;
  if (!mpnanny::compute_tensor_stats_cuda(device_tensor, gpu)) {
    expect(false, name, "the CUDA path refused the tensor");
    return;
  }
  const int before = failures;
  auto count = [&](const char* field, int64_t a, int64_t b) {
    expect(a == b, name + "." + field, "cpu " + std::to_string(a) + " gpu " + std::to_string(b));
  };
  count("numel", cpu.numel, gpu.numel);
  count("nan_count", cpu.nan_count, gpu.nan_count);
  count("inf_count", cpu.inf_count, gpu.inf_count);
  count("zero_count", cpu.zero_count, gpu.zero_count);
  count("fp16_overflow", cpu.fp16_overflow, gpu.fp16_overflow);
  count("fp16_subnormal", cpu.fp16_subnormal, gpu.fp16_subnormal);
  count("fp16_flush", cpu.fp16_flush, gpu.fp16_flush);
  count("bf16_overflow", cpu.bf16_overflow, gpu.bf16_overflow);
  count("bf16_subnormal", cpu.bf16_subnormal, gpu.bf16_subnormal);
  count("bf16_flush", cpu.bf16_flush, gpu.bf16_flush);
  for (int b = 0; b < mpnanny::kHistogramBuckets; ++b)
    count(("histogram[" + std::to_string(b) + "]").c_str(), cpu.histogram[b], gpu.histogram[b]);
  expect(cpu.max_abs == gpu.max_abs, name + ".max_abs",
         std::to_string(cpu.max_abs) + " vs " + std::to_string(gpu.max_abs));
  expect(cpu.min_abs_nonzero == gpu.min_abs_nonzero, name + ".min_abs_nonzero",
         std::to_string(cpu.min_abs_nonzero) + " vs " + std::to_string(gpu.min_abs_nonzero));
  // Sums differ only in the order of additions: bound by the magnitude added up.
  const double scale = std::sqrt(cpu.sum_squares * static_cast<double>(std::max<int64_t>(cpu.numel, 1)));
  const double tolerance = 1e-5 * scale + 1e-300;
  expect(std::fabs(cpu.sum - gpu.sum) <= tolerance, name + ".sum",
         std::to_string(cpu.sum) + " vs " + std::to_string(gpu.sum));
  expect(std::fabs(cpu.sum_squares - gpu.sum_squares) <= 1e-5 * cpu.sum_squares + 1e-300, name + ".sum_squares",
         std::to_string(cpu.sum_squares) + " vs " + std::to_string(gpu.sum_squares));
  std::printf("  %-40s %s\n", name.c_str(), failures == before ? "ok" : "FAILED");
}

// Values in every class: NaN, +-Inf, +-0, fp16 overflow, fp16 subnormal and flush, bf16 ones,
// doubles beyond float, and a log-uniform spread over the whole histogram.
at::Tensor crafted(int64_t n, at::ScalarType dtype) {
  at::Tensor x = at::exp2(at::rand({n}, at::kDouble) * 300.0 - 150.0) * (at::randint(0, 2, {n}, at::kDouble) * 2 - 1);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             0.0,
                             -0.0,
                             65504.0,
                             65520.0,
                             72013.0,
                             6.103515625e-05,
                             3e-05,
                             2.98023223876953125e-08,
                             2e-08,
                             1e-40,
                             4e-41,
                             3.4e38,
                             1e300,
                             1e-300,
                             1.0,
                             -1.0};
  const int64_t count = sizeof specials / sizeof specials[0];
  for (int64_t i = 0; i < count && i < n; ++i) x[i * 7 % n] = specials[i];
  return x.to(dtype);
}

float time_ms(const std::function<void()>& body, cudaStream_t stream, int repeats) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  body();  // warm-up
  cudaEventRecord(start, stream);
  for (int i = 0; i < repeats; ++i) body();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / repeats;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 2;
  }
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  std::printf("device: %s (sm_%d%d)\n", properties.name, properties.major, properties.minor);
  at::manual_seed(0);
  const at::Device gpu(at::kCUDA, 0);

  std::printf("correctness (CUDA kernel against the CPU kernel):\n");
  const at::ScalarType dtypes[] = {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble};
  for (at::ScalarType dtype : dtypes) {
    const std::string type_name = c10::toString(dtype);
    // Sizes around the vector width and the block size, one large enough for a full grid.
    for (int64_t n : {1, 7, 8, 9, 255, 257, 4099, 1000003}) {
      compare(crafted(n, dtype).to(gpu), type_name + " n=" + std::to_string(n));
    }
    const at::Tensor base = crafted(4 * 1024 + 3, dtype).to(gpu);
    compare(base.narrow(0, 1, 4 * 1024 + 1), type_name + " misaligned view");
    compare(base.narrow(0, 0, 4 * 1024).view({64, 64}).t(), type_name + " transposed");
    compare(at::zeros({1000}, at::TensorOptions().dtype(dtype).device(gpu)), type_name + " zeros");
  }

  std::printf("memory (the caching allocator's statistics, as the nanny samples them):\n");
  {
    const int before = failures;
    const at::Tensor held = at::empty({int64_t{64} << 20}, at::TensorOptions().dtype(at::kByte).device(gpu));
    const mpnanny::MemorySample sample = mpnanny::sample_memory();
    const auto bytes = static_cast<int64_t>(held.nbytes());
    expect(sample.cuda_allocated_bytes >= bytes, "allocated",
           std::to_string(sample.cuda_allocated_bytes) + " < a live tensor of " + std::to_string(bytes));
    expect(sample.cuda_allocated_peak_bytes >= sample.cuda_allocated_bytes, "allocated peak",
           std::to_string(sample.cuda_allocated_peak_bytes));
    expect(sample.cuda_reserved_bytes >= sample.cuda_allocated_bytes, "reserved",
           std::to_string(sample.cuda_reserved_bytes));
    expect(sample.cuda_reserved_peak_bytes >= sample.cuda_reserved_bytes, "reserved peak",
           std::to_string(sample.cuda_reserved_peak_bytes));
    expect(sample.cuda_alloc_retries >= 0, "alloc retries", std::to_string(sample.cuda_alloc_retries));
    expect(sample.rss_bytes > 0, "rss", std::to_string(sample.rss_bytes));
    std::printf("  %-40s %s\n", "sample_memory with 64 MiB held", failures == before ? "ok" : "FAILED");
  }

  std::printf("bandwidth (kernel read of N bytes vs a device-to-device copy of N bytes, read + write):\n");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(0).stream();
  mpnanny::cuda::StatWorkspace workspace;
  workspace.prepare(0);
  const std::pair<at::ScalarType, mpnanny::cuda::ElementType> kinds[] = {
      {at::kHalf, mpnanny::cuda::ElementType::Half},
      {at::kBFloat16, mpnanny::cuda::ElementType::BFloat16},
      {at::kFloat, mpnanny::cuda::ElementType::Float},
      {at::kDouble, mpnanny::cuda::ElementType::Double}};
  const int64_t bytes = int64_t{512} << 20;
  for (const auto& [dtype, type] : kinds) {
    const int64_t n = bytes / static_cast<int64_t>(c10::elementSize(dtype));
    const at::Tensor x = at::randn({n}, at::TensorOptions().dtype(dtype).device(gpu));
    const at::Tensor y = at::empty_like(x);
    const float stat_ms =
        time_ms([&] { mpnanny::cuda::launch_tensor_stats(x.data_ptr(), n, type, stream, workspace); }, stream, 20);
    const float copy_ms = time_ms(
        [&] { cudaMemcpyAsync(y.data_ptr(), x.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream); }, stream, 20);
    const double stat_gbs = bytes / (stat_ms * 1e6);
    const double copy_gbs = 2.0 * bytes / (copy_ms * 1e6);
    std::printf("  %-10s stats %8.1f GB/s (%.3f ms)  copy %8.1f GB/s (%.3f ms)  share %.0f %%\n", c10::toString(dtype),
                stat_gbs, stat_ms, copy_gbs, copy_ms, 100.0 * stat_gbs / copy_gbs);
  }
  const cudaError_t error = cudaDeviceSynchronize();
  if (error != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(error));
    return 1;
  }
  std::printf("%s: %d mismatches\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
