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
  // CMAKE_PREFIX_PATH is a list; an entry may be a prefix or a TorchConfig.cmake folder
  // (python -c 'import torch; print(torch.utils.cmake_prefix_path)' gives <torch>/share/cmake).
  if (const char *List = std::getenv("CMAKE_PREFIX_PATH"); List && *List) {
    std::string Entries = List;
    for (size_t Begin = 0; Begin <= Entries.size();) {
      size_t End = Entries.find(':', Begin);
      if (End == std::string::npos)
        End = Entries.size();
      fs::path P = Entries.substr(Begin, End - Begin);
      for (int Up = 0; Up < 4 && !P.empty(); ++Up, P = P.parent_path())
        Prefixes.push_back(P);
      Begin = End + 1;
    }
  }
  Prefixes.insert(Prefixes.end(), {"/usr", "/usr/local", "/opt/libtorch", "/usr/local/libtorch"});
  // A pip-installed PyTorch ships LibTorch's headers inside the Python package.
  std::vector<fs::path> Environments;
  for (const char *Var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *Dir = std::getenv(Var); Dir && *Dir)
      Environments.emplace_back(Dir);
  Environments.insert(Environments.end(), {"/usr/local", "/usr"});
  for (const auto &Env : Environments) {
    std::error_code EC;
    fs::path Lib = Env / "lib";
    if (!fs::is_directory(Lib, EC))
      continue;
    for (const auto &Entry : fs::directory_iterator(Lib, EC)) {
      std::string Name = Entry.path().filename().string();
      if (Name.rfind("python3", 0) != 0)
        continue;
      for (const char *Packages : {"site-packages", "dist-packages"})
        Prefixes.push_back(Entry.path() / Packages / "torch");
    }
  }
  for (const auto &P : Prefixes) {
    auto Dirs = includeDirsUnder(P);
    if (!Dirs.empty())
      return Dirs;
  }
  return {};
}

} // namespace mpnanny::check
