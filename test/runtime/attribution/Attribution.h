// User code in places the source locator must still call the user's: a folder named ext/, and a
// file compiled without debug information. Each runs exp(x + 20), an fp16 overflow.
#ifndef MPNANNY_TEST_RUNTIME_ATTRIBUTION_H
#define MPNANNY_TEST_RUNTIME_ATTRIBUTION_H

#include <ATen/core/Tensor.h>

namespace mpnanny::test {

/// From attribution/ext/ExtFolder.cpp; returns the line of the exp.
int overflow_in_a_folder_named_ext(const at::Tensor& x);

/// From attribution/NoDebugInfo.cpp, compiled with -g0 -O0 (so that LibTorch's inline at::exp is
/// a frame of its own in this binary, without debug information either).
void overflow_without_debug_info(const at::Tensor& x);

}  // namespace mpnanny::test

#endif
