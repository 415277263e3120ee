//===--- TorchHeaders.h - mpnanny-check --------------------------*- C++ -*-===//
#ifndef MPNANNY_TOOLS_TORCHHEADERS_H
#define MPNANNY_TOOLS_TORCHHEADERS_H

#include <string>
#include <vector>

namespace mpnanny::check {

/// LibTorch's include directories (the one holding torch/torch.h first), found
/// from $TORCH_DIR, $CMAKE_PREFIX_PATH (prefixes or TorchConfig.cmake folders),
/// common install prefixes, then a pip-installed PyTorch (virtualenv, conda,
/// /usr/local). Empty when LibTorch is not installed.
std::vector<std::string> findTorchIncludeDirs();

} // namespace mpnanny::check

#endif
