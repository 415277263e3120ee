//===--- CudaFlags.h - mpnanny-check -----------------------------*- C++ -*-===//
//
// CUDA sources through both doors: which commands compile CUDA, nvcc command lines
// (CMake's CUDA language, torch's cpp_extension) in Clang's words, and the flags that
// let Clang parse a kernel file on a machine with no CUDA toolkit it can read: the
// host side (Clang parses the bodies of __global__ and __device__ functions there
// too), with -nocudainc and mpnanny's own declarations of the runtime (cuda-include/).
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_CUDAFLAGS_H
#define MPNANNY_TOOLS_CUDAFLAGS_H

#include "clang/Tooling/ArgumentsAdjusters.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace mpnanny::check {

/// .cu or .cuh: CUDA unless the command says otherwise (-x c++).
bool hasCudaExtension(llvm::StringRef File);

/// True when Args compile File as CUDA: the last -x before it says cuda, or none
/// does and File is a .cu/.cuh file.
bool compilesCuda(const clang::tooling::CommandLineArguments &Args, llvm::StringRef File);

/// True when Args[0] is nvcc.
bool isNvccCommand(const clang::tooling::CommandLineArguments &Args);

/// An nvcc command line in Clang's words: include folders, macros, forced includes
/// and the language standard kept; -Xcompiler/--compiler-options unwrapped (their
/// -I/-D/-U/-std/-O/-W/-f flags kept); -gencode/-arch/-code mapped to one
/// --cuda-gpu-arch (the newest architecture listed that this Clang knows); every other
/// nvcc option dropped with its value; an absolute nvcc path becomes --cuda-path.
clang::tooling::CommandLineArguments fromNvcc(const clang::tooling::CommandLineArguments &Args);

/// A CUDA toolkit and whether the Clang the checks were built with reads it.
struct CudaToolkit {
  std::string Path;
  std::string Version; ///< "13.0"; empty when it could not be read
  bool Readable = false;
};

/// The newest CUDA version the Clang we were built with supports ("11.8" for Clang 16).
std::string newestReadableCudaVersion();

/// The toolkit a CUDA command would use: MPNANNY_CUDA_PATH (`none`: no toolkit), the
/// command's --cuda-path, CUDA_PATH / CUDA_HOME, /usr/local/cuda, /usr/lib/cuda.
/// Nullopt when there is none.
std::optional<CudaToolkit> findCudaToolkit(const clang::tooling::CommandLineArguments &Args);

/// mpnanny's CUDA headers (cuda-include/): MPNANNY_CUDA_INCLUDE, the installed data
/// folder, else the source tree's.
std::string cudaIncludeDir();

/// For the commands that compile CUDA: nvcc's translated, a host-side parse unless the
/// command picks a side, no libdevice, and mpnanny's headers (with -nocudainc, instead
/// of the toolkit's include folders) when no toolkit this Clang reads is found. Other
/// commands pass unchanged.
clang::tooling::ArgumentsAdjuster cudaArgumentsAdjuster();

} // namespace mpnanny::check

#endif
