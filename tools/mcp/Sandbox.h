//===--- Sandbox.h - mpnanny-mcp ---------------------------------*- C++ -*-===//
//
// What the MCP server may touch. An agent names paths and compiler flags, and an
// agent can be talked into asking for ~/.ssh/id_rsa: every path is resolved
// (symlinks, `..`) and must fall under a root the server was started with; the
// compiler reads through a file system that only opens the roots and the system
// header folders; flags that load code or write files are refused; reads are
// bounded.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_MCP_SANDBOX_H
#define MPNANNY_TOOLS_MCP_SANDBOX_H

#include "Protocol.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mpnanny::mcp {

class Sandbox {
public:
  /// Roots and HeaderDirs are made canonical; a root that does not exist is an error
  /// (std::runtime_error), since serving nothing silently would only confuse.
  Sandbox(const std::vector<std::string> &Roots, std::vector<std::string> HeaderDirs,
          size_t MaxReadBytes);

  const std::vector<std::string> &roots() const { return Roots; }
  size_t maxReadBytes() const { return MaxRead; }

  enum class Kind { File, Directory, Any };
  /// The canonical path of an existing file or folder under a root. A relative path is
  /// taken from the first root. Throws RpcError (InvalidParams) naming the reason:
  /// outside_root, not_found, not_a_file, not_a_directory, too_large.
  /// SizeBounded: a regular file over maxReadBytes() is refused (too_large); off for
  /// databases, which are queried, not read whole.
  std::string resolve(const std::string &Path, Kind K, const std::string &Argument,
                      bool SizeBounded = true) const;
  /// The whole file, at most maxReadBytes() (else too_large). Path must be resolved.
  std::string read(const std::string &Resolved, const std::string &Argument) const;
  /// Whether an absolute path lies under a root, after resolving what exists of it.
  bool contains(const std::string &Path) const;

  /// What the compiler reads through: the roots and the header folders, nothing else.
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> compilerFileSystem() const;
  /// Where `.clang-tidy` files are looked up: the roots only.
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> rootFileSystem() const;

  /// An agent's compiler flags, checked against what a scan needs (include paths,
  /// macros, language, warnings); anything else is refused with the flag named.
  static void checkFlags(const std::vector<std::string> &Flags, const std::string &Argument);
  /// Drops from a build's compile commands what could load code or write files
  /// (plugins, -Xclang, -mllvm, dependency and diagnostic files, module caches).
  static clang::tooling::ArgumentsAdjuster stripUnsafeArguments();

private:
  std::vector<std::string> Roots, HeaderDirs;
  size_t MaxRead;
};

/// `p` is `dir` or lies below it; both canonical.
bool isUnder(const std::string &P, const std::string &Dir);

/// At most Max + 1 bytes of a file (one more than allowed tells the caller it was too
/// big without reading all of it); nullopt when it cannot be opened.
std::optional<std::string> readBounded(const std::string &Path, size_t Max);

} // namespace mpnanny::mcp

#endif
