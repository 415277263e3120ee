// Kernels of a detection extension: a softmax over class scores, IoU areas, a layer norm.
#include <cmath>
#include <cuda_fp16_mock.h>
#include <torch/extension.h>

template <typename scalar_t>
void class_softmax_kernel(const scalar_t *scores, scalar_t *probs, scalar_t row_max, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    probs[i] = static_cast<scalar_t>(std::exp(static_cast<float>(scores[i]))); // expect: mpnanny-kernel-half-overflow
    probs[i] = static_cast<scalar_t>(std::exp(static_cast<float>(scores[i] - row_max))); // ok: mpnanny-kernel-half-overflow
  }
}

template <typename scalar_t>
void box_area_kernel(const scalar_t *boxes, scalar_t *areas, at::acc_type<scalar_t, true> *areas32,
                     int64_t n) {
  using acc_t = at::acc_type<scalar_t, true>;
  for (int64_t i = 0; i < n; ++i) {
    const scalar_t *b = boxes + 4 * i;
    areas[i] = (b[2] - b[0]) * (b[3] - b[1]); // expect: mpnanny-kernel-half-overflow
    areas32[i] = (static_cast<acc_t>(b[2]) - b[0]) * (static_cast<acc_t>(b[3]) - b[1]); // ok: mpnanny-kernel-half-overflow
  }
}

void detect(const at::Tensor &scores, at::Tensor &probs, const at::Tensor &boxes,
            at::Tensor &areas, at::Tensor &areas32, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(scores.scalar_type(), "detect", [&] {
    class_softmax_kernel<scalar_t>(scores.data_ptr<scalar_t>(), probs.data_ptr<scalar_t>(),
                                   scalar_t(0), n);
    box_area_kernel<scalar_t>(boxes.data_ptr<scalar_t>(), areas.data_ptr<scalar_t>(),
                              areas32.data_ptr<at::acc_type<scalar_t, true>>(), n);
  });
}

// A hand-written fp16 layer norm.
void layer_norm_half(const __half *x, __half *y, int n) {
  __half mean = __float2half(0.f);
  __half var = __float2half(0.f); // expect: mpnanny-kernel-half-accumulator
  float var32 = 0.f;
  for (int i = 0; i < n; ++i) {
    __half sq = __hmul(x[i], x[i]); // expect: mpnanny-kernel-half-overflow
    float v = __half2float(x[i]);
    var32 += v * v; // ok: mpnanny-kernel-half-overflow
    var = __hadd(var, sq);
  }
  y[0] = hrsqrt(var); // expect: mpnanny-kernel-half-overflow
  y[1] = __float2half(rsqrtf(var32 / n + 1e-5f)); // ok: mpnanny-kernel-half-overflow
  y[2] = mean;
}
