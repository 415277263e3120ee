// A masked softmax kernel of an attention extension: sentinels converted to scalar_t.
#include <cfloat>
#include <limits>
#include <torch/extension.h>

template <typename scalar_t>
void masked_softmax_kernel(const scalar_t *x, const bool *mask, scalar_t *out, int64_t n) {
  scalar_t row_max = -FLT_MAX; // expect: mpnanny-kernel-constant-range
  scalar_t fill = static_cast<scalar_t>(-1e9); // expect: mpnanny-kernel-constant-range
  scalar_t lowest = std::numeric_limits<scalar_t>::lowest(); // ok: mpnanny-kernel-constant-range
  scalar_t soft_fill = static_cast<scalar_t>(-1e4); // ok: mpnanny-kernel-constant-range
  at::acc_type<scalar_t, true> acc_max = -1e30; // ok: mpnanny-kernel-constant-range
  for (int64_t i = 0; i < n; ++i) {
    scalar_t v = mask[i] ? x[i] : fill;
    row_max = v > row_max ? v : row_max;
  }
  scalar_t eps = static_cast<scalar_t>(1e-10); // expect: mpnanny-kernel-constant-range
  scalar_t eps_ok = static_cast<scalar_t>(1e-4); // ok: mpnanny-kernel-constant-range
  out[0] = row_max + lowest + soft_fill + static_cast<scalar_t>(acc_max) + eps + eps_ok;
}

void masked_softmax(const at::Tensor &x, const at::Tensor &mask, at::Tensor &out, int64_t n) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "masked_softmax", [&] {
    masked_softmax_kernel<scalar_t>(x.data_ptr<scalar_t>(), mask.data_ptr<bool>(),
                                    out.data_ptr<scalar_t>(), n);
  });
}
