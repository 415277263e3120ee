// A CPU extension kernel that averages over channels, dispatched for Half and BFloat16: the
// running sum is scalar_t, so it is kept in half. The fixed twin accumulates in acc_type.
#include <torch/extension.h>

template <typename scalar_t>
void channel_mean_kernel(const scalar_t *in, scalar_t *out, int64_t channels, int64_t hw) {
  for (int64_t p = 0; p < hw; ++p) {
    scalar_t sum = 0; // expect: mpnanny-kernel-half-accumulator
    for (int64_t c = 0; c < channels; ++c)
      sum += in[c * hw + p];
    out[p] = sum / static_cast<int>(channels);
  }
}

template <typename scalar_t>
void channel_mean_fixed_kernel(const scalar_t *in, scalar_t *out, int64_t channels, int64_t hw) {
  for (int64_t p = 0; p < hw; ++p) {
    at::acc_type<scalar_t, false> sum = 0; // ok: mpnanny-kernel-half-accumulator
    for (int64_t c = 0; c < channels; ++c)
      sum += in[c * hw + p];
    out[p] = static_cast<scalar_t>(sum / channels);
  }
}

// Bilinear interpolation: four weighted corners, a few bounded terms.
template <typename scalar_t>
scalar_t bilinear(const scalar_t *corners, const scalar_t *weights) {
  scalar_t value = 0; // ok: mpnanny-kernel-half-accumulator
  for (int k = 0; k < 4; ++k)
    value += weights[k] * corners[k];
  return value;
}

void channel_mean(const at::Tensor &x, at::Tensor &out, int64_t channels, int64_t hw) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(),
                                  "channel_mean", [&] {
    channel_mean_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), channels, hw);
    channel_mean_fixed_kernel<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
                                        channels, hw);
    bilinear<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>());
  });
}

// The same loop in a float-only dispatch.
void channel_mean_fp32(const at::Tensor &x, at::Tensor &out, int64_t channels) {
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "channel_mean_fp32", [&] {
    const scalar_t *in = x.data_ptr<scalar_t>();
    scalar_t sum = 0; // ok: mpnanny-kernel-half-accumulator
    for (int64_t c = 0; c < channels; ++c)
      sum += in[c];
    out.data_ptr<scalar_t>()[0] = sum;
  });
}
