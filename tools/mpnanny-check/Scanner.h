//===--- Scanner.h - mpnanny-check -------------------------------*- C++ -*-===//
//
// The scan as a library, so that mpnanny-check and the MCP server (tools/mcp)
// run the checks the same way: the clang-tidy context and its options, the
// compile commands (resource directory, flags for a file no database lists),
// and one call that scans files, possibly held in memory, and returns the
// findings with their fix-its and the files that did not parse.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_SCANNER_H
#define MPNANNY_TOOLS_SCANNER_H

#include "Output.h"
#include "Scan.h"
#include "clang-tidy/ClangTidy.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mpnanny::check {

struct ScanOptions {
  /// A clang-tidy glob; unset: `.clang-tidy` files decide, else "-*,mpnanny-*".
  std::optional<std::string> Checks;
  std::string Precision; ///< "" infers it per function
  std::string RulesDir;  ///< "" uses the bundled rules
  /// The project's facts file; "" looks for mpnanny-facts.json above each compile command's
  /// folder; "none" reads none.
  std::string FactsFile;
  /// Who named FactsFile (`--facts`, a project file): said when it cannot be read.
  std::string FactsNamedBy;
  /// Where `.clang-tidy` files above each source are looked for; null: the disk.
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> ConfigFS;
};

std::unique_ptr<clang::tidy::ClangTidyContext> makeContext(const ScanOptions &Options);

/// The mpnanny checks the glob enables, sorted.
std::vector<std::string> checkNames(const std::string &Glob = "-*,mpnanny-*");

/// Flags for a file that no compilation database describes: C++17 (CUDA for a .cu or
/// .cuh File) and LibTorch's headers as system headers, so nothing is reported from them.
std::vector<std::string> defaultFlags(llvm::StringRef File = "");
/// `-isystem DIR` for each of LibTorch's include folders found (findTorchIncludeDirs()).
std::vector<std::string> torchIncludeFlags();
/// True when a command's include flags already name a folder holding <torch/torch.h>
/// (LibTorch's own, or a stand-in for it).
bool namesTorchIncludeDir(const clang::tooling::CommandLineArguments &Args);
/// Base's commands with LibTorch's include folders appended, unless a command names
/// its own: flags given by hand after `--` then find LibTorch as a scan without them does.
std::unique_ptr<clang::tooling::CompilationDatabase>
withTorchHeaders(std::unique_ptr<clang::tooling::CompilationDatabase> Base);

/// Base's commands with the resource directory of the Clang we were built with and
/// ExtraArgs appended; CUDA commands (nvcc's among them) made readable to that Clang
/// (cudaArgumentsAdjuster()).
std::unique_ptr<clang::tooling::CompilationDatabase>
adjusted(std::unique_ptr<clang::tooling::CompilationDatabase> Base,
         const std::vector<std::string> &ExtraArgs);

/// The commands of a file given without a database: those of a compile_commands.json
/// above it that lists it, else defaultFlags().
std::vector<clang::tooling::CompileCommand>
discoveredCommands(const std::string &File, const std::vector<std::string> &ExtraArgs);

/// How mpnanny-check tells a user to pass the build's flags.
inline const char *const FlagsHint =
    "Pass the build's flags with -p build (compile_commands.json) or after -- (-- -std=c++17 "
    "-I...)";

/// FlagsHint, and what mpnanny-check does about LibTorch's headers: which ones it adds
/// to flags given by hand, or that it found none and how to point it at them.
std::string flagsHint();

/// One line per file that did not compile: the count, the first error and Hint.
std::vector<std::string> parseProblems(const std::vector<FileScan> &Scans,
                                       const std::string &Hint = flagsHint());

struct ScanRequest {
  std::vector<std::string> Files; ///< absolute paths
  /// Sources held in memory (absolute path -> text): they shadow the disk and are
  /// never written to it.
  std::map<std::string, std::string> Overlay;
  /// Commands per file; empty: Flags, else discoveredCommands().
  const clang::tooling::CompilationDatabase *Database = nullptr;
  std::optional<std::vector<std::string>> Flags;
  std::vector<std::string> ExtraArgs;
  ScanOptions Options;
  unsigned Jobs = 1;
  /// The file system the compiler reads through (one per file); null: the disk.
  FileSystemFactory BaseFS;
};

struct ScanResult {
  std::vector<Finding> Findings; ///< located against the text that was scanned
  std::vector<std::string> Problems;
  std::vector<std::string> ConfigErrors;
};

/// Hint: see parseProblems().
ScanResult scan(const ScanRequest &Request, const std::string &Hint);

/// Line and column (1-based, bytes) of an offset in a text.
Location locateIn(const std::string &File, const std::string &Text, unsigned Offset);

} // namespace mpnanny::check

#endif
