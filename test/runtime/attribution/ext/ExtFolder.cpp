#include <ATen/ops/exp.h>

#include "attribution/Attribution.h"

namespace mpnanny::test {

int overflow_in_a_folder_named_ext(const at::Tensor& x) {
  (void)at::exp(x.add(20)); return __LINE__;
}

}  // namespace mpnanny::test
