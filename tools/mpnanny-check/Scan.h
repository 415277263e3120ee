//===--- Scan.h - mpnanny-check ----------------------------------*- C++ -*-===//
//
// Scanning many translation units: which files of a compilation database are the
// project's own, and running the checks over them on N threads, each file with
// its own clang-tidy context, the results kept in the files' order so that the
// output does not depend on N.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_SCAN_H
#define MPNANNY_TOOLS_SCAN_H

#include "HeaderCache.h"
#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "utils/FindingLog.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mpnanny::check {

/// The project's own C/C++ sources in a compilation database: not third-party
/// (_deps/, third_party/, external/, vendor/, /usr/, /opt/), not generated in the
/// build folder. Sorted, each once.
std::vector<std::string> projectFiles(const clang::tooling::CompilationDatabase &DB,
                                      const std::string &BuildDir);

struct FileScan {
  std::string File;
  std::unique_ptr<clang::tidy::ClangTidyContext> Context;
  std::vector<clang::tidy::ClangTidyError> Errors;
  std::vector<FindingDetail> Details;
  /// The user functions the checks left out because they did not parse (ParseHealth.h).
  std::vector<ParseSummary> Parse;
  /// The unit's precision facts (JSON text), when the scan ran the facts collector.
  std::vector<std::string> Facts;
  /// Set when the file ran past the time limit: its findings are missing.
  std::optional<unsigned> StoppedAfterSeconds;
};

/// How files are scanned, beyond their commands.
struct ScanSettings {
  /// The LibTorch header cache; null: every header is parsed every time.
  HeaderCache *Cache = nullptr;
  /// Seconds one file may take; 0: no limit. A file past it is abandoned, reported, and
  /// the others go on; the caller must then end the process with std::_Exit, since the
  /// abandoned parse still runs on its thread.
  unsigned TimeoutSeconds = 0;
  /// Each check's matching time, per file, on stderr (clang-tidy's --enable-check-profile).
  bool Profile = false;
  /// A command that builds the missing cache entry of a single file in a process of its own
  /// (this program with --build-cache-only), started detached so that the scan ends without
  /// waiting for it. Empty: the entry is built on a thread alongside the scan, waited for.
  std::vector<std::string> DetachedCacheBuild;
};

using ContextFactory = std::function<std::unique_ptr<clang::tidy::ClangTidyContext>()>;
/// A fresh file system per file (clang-tidy sets the working directory on it).
using FileSystemFactory = std::function<llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>()>;

/// Runs the checks on every file, Jobs at a time. Commands[i] are the compile
/// commands of Files[i]. MakeFS, when set, is what the compiler reads
/// through (sources in memory, a sandbox); by default the disk. Progress "[i/N] file" goes
/// to stderr when it is a terminal. With a header cache, each distinct set of leading
/// includes is precompiled once, before the files fan out.
std::vector<FileScan>
scanFiles(const std::vector<std::string> &Files,
          const std::vector<std::vector<clang::tooling::CompileCommand>> &Commands,
          const ContextFactory &MakeContext, unsigned Jobs, bool ApplyFixes,
          const FileSystemFactory &MakeFS = nullptr, const ScanSettings &Settings = {});

/// Drops the diagnostics an earlier file already reported (a finding in a header
/// that several files include), so that each is printed and counted once.
void dropRepeats(std::vector<FileScan> &Scans);

/// Builds every missing cache entry of Files, Jobs at a time, and scans nothing: what a
/// detached --build-cache-only process does for the scan that started it.
void buildCacheEntries(HeaderCache &Cache, const std::vector<std::string> &Files,
                       const std::vector<std::vector<clang::tooling::CompileCommand>> &Commands,
                       unsigned Jobs);

} // namespace mpnanny::check

#endif
