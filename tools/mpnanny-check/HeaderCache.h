//===--- HeaderCache.h - mpnanny-check ---------------------------*- C++ -*-===//
//
// The LibTorch header cache: parsing <torch/torch.h> dominates every scan, so the
// leading `#include <...>` lines of a file are compiled once into a precompiled
// header, which later scans of any file that starts with the same includes under
// the same flags load with -include-pch. The main file still includes the headers
// (their include guards make that a no-op), so the findings are those of a scan
// without the cache.
//
// An entry is <key>.h (the includes), <key>.pch, and <key>.json (the manifest: the
// PCH's size and hash, every input file with its size and modification time). The
// key hashes the compiler's version, the working directory, the flags and the
// includes. Entries are written to a temporary file and renamed, under a lock file,
// so concurrent scans never see half a PCH; an entry whose PCH or inputs do not
// match its manifest is removed and rebuilt, never used.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_HEADERCACHE_H
#define MPNANNY_TOOLS_HEADERCACHE_H

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mpnanny::check {

/// $XDG_CACHE_HOME/mpnanny, else $HOME/.cache/mpnanny; empty when neither is set.
std::string defaultCacheDirectory();

/// The leading `#include <...>` directives of a source, one per line (comments and
/// blank lines between them dropped): what a precompiled header can stand for. Ends at
/// the first other token, a quoted include among them (it resolves next to the file).
std::string leadingAngleIncludes(llvm::StringRef Source);

class HeaderCache {
public:
  explicit HeaderCache(std::string Directory) : Directory(std::move(Directory)) {}

  /// What a file's entry is made from; null when the file cannot use the cache
  /// (no leading angle includes, forced includes, a PCH of its own).
  struct Plan {
    std::string Key;
    std::string Includes; ///< the text of <key>.h
    std::string WorkingDirectory;
    std::vector<std::string> Args; ///< the compile command without file and output
  };
  static std::optional<Plan> planFor(const clang::tooling::CompileCommand &Command,
                                     llvm::StringRef Source);

  /// The PCH for Plan: a valid entry, or one built now. Null when it cannot be built
  /// (a header does not compile, the folder is not writable); Note then says why, once.
  std::optional<std::string> pchFor(const Plan &P, std::string &Note);

  /// Whether Plan's entry has to be built: not when it is valid, or remembered as failed
  /// (Note says so, once). A broken entry is removed, and Note says it will be rebuilt.
  bool needsBuild(const Plan &P, std::string &Note);

  /// Whether Plan's entry is there and valid: a file can use it at once.
  bool ready(const Plan &P) const {
    std::string Why;
    return check(P.Key, Why) == State::Valid;
  }

  /// Command, reading the PCH first. Clang checks the inputs' sizes and times too,
  /// system headers included, and refuses an entry that went stale meanwhile.
  static clang::tooling::CompileCommand withPch(clang::tooling::CompileCommand Command,
                                                const std::string &Pch);

  /// Whether a compiler error is about a precompiled header (stale, corrupt, built
  /// with other options): then the entry is discarded and the file scanned without it.
  static bool isPchError(llvm::StringRef Message);

  /// Removes the entry a PCH belongs to, so that the next scan rebuilds it.
  void discard(const std::string &Pch);

  const std::string &directory() const { return Directory; }

private:
  enum class State { Valid, Missing, Failed, Broken };
  State check(const std::string &Key, std::string &Why) const;
  void reportOnce(const std::string &Key, const std::string &Text, std::string &Note);
  bool build(const Plan &P, std::string &Error);
  void remove(const std::string &Key);
  std::string path(const std::string &Key, llvm::StringRef Extension) const;

  std::string Directory;
  std::mutex Lock;
  std::set<std::string> Reported; ///< keys whose problem was reported already
};

} // namespace mpnanny::check

#endif
