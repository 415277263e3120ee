//===--- TorchHeaders.h - mpnanny-check --------------------------*- C++ -*-===//
#ifndef MPNANNY_TOOLS_TORCHHEADERS_H
#define MPNANNY_TOOLS_TORCHHEADERS_H

#include <string>
#include <vector>

namespace mpnanny::check {

/// LibTorch's include directories (the one holding torch/torch.h first), found
/// from $TORCH_DIR, TorchConfig.cmake, then common install prefixes. Empty when
/// LibTorch is not installed.
std::vector<std::string> findTorchIncludeDirs();

} // namespace mpnanny::check

#endif
