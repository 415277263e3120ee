//===--- TorchHeaders.cpp - mpnanny-check ----------------------------------===//
#include "TorchHeaders.h"

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace mpnanny::check {

/// A prefix holds LibTorch when <prefix>/include/torch/csrc/api/include/torch/torch.h exists.
static std::vector<std::string> includeDirsUnder(const fs::path &Prefix) {
  std::error_code EC;
  fs::path Include = Prefix / "include";
  if (fs::exists(Include / "torch/csrc/api/include/torch/torch.h", EC))
    return {(Include / "torch/csrc/api/include").string(), Include.string()};
  return {};
}

std::vector<std::string> findTorchIncludeDirs() {
  std::vector<fs::path> Prefixes;
  if (const char *Dir = std::getenv("TORCH_DIR"); Dir && *Dir) {
    // TORCH_DIR may name the prefix or the CMake package folder inside it
    // (<prefix>/share/cmake/Torch, <prefix>/lib/<arch>/cmake/Torch).
    fs::path P = Dir;
    for (int Up = 0; Up < 5 && !P.empty(); ++Up, P = P.parent_path())
      Prefixes.push_back(P);
  }
  if (const char *Dir = std::getenv("CMAKE_PREFIX_PATH"); Dir && *Dir)
    Prefixes.emplace_back(Dir);
  Prefixes.insert(Prefixes.end(), {"/usr", "/usr/local", "/opt/libtorch", "/usr/local/libtorch"});
  for (const auto &P : Prefixes) {
    auto Dirs = includeDirsUnder(P);
    if (!Dirs.empty())
      return Dirs;
  }
  return {};
}

} // namespace mpnanny::check
