// A small extension kernel file: a dispatch that instantiates a kernel for at::Half, __half2
// arithmetic, and host code in the same file (the glue every extension has).
#include <ATen/Dispatch.h>
#include <cuda_fp16.h>
#include <torch/torch.h>

template <typename scalar_t>
__global__ void row_sum_kernel(const scalar_t *x, scalar_t *out, int n) {
  scalar_t sum = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    sum += x[i];
  out[blockIdx.x] = sum;
}

__global__ void dot_half2_kernel(const __half2 *a, __half2 *out, int n) {
  __half2 acc = __float2half2_rn(0.f);
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    acc = __hfma2(a[i], a[i], acc);
  atomicAdd(out, h2rsqrt(acc));
}

// Host code of a .cu file: the checks that read torch:: code read it here too.
torch::Tensor masked_scores(torch::Tensor scores, torch::Tensor mask) {
  auto h = scores.to(torch::kHalf);
  return h.masked_fill(mask, -1e9);
}

// A __host__ __device__ function's body, read by the checks on the host side.
__host__ __device__ torch::Tensor host_device_body(torch::Tensor x) {
  auto h = x.to(torch::kHalf);
  return h.masked_fill(h > 0, -1e9);
}

torch::Tensor row_sum(torch::Tensor x) {
  auto out = torch::empty({x.size(0)}, x.options());
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "row_sum", [&] {
    row_sum_kernel<scalar_t><<<x.size(0), 256>>>(x.data_ptr<scalar_t>(),
                                                 out.data_ptr<scalar_t>(), x.size(1));
  });
  return out;
}
