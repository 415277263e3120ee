//===--- FactsPass.h - mpnanny-check -----------------------------*- C++ -*-===//
//
// The project's precision facts (checks/utils/ProjectFacts.h), built from every file of a
// compilation database: each file is parsed once by a collector that exports what its
// translation unit knows, the units are merged and resolved, and the result is written to
// mpnanny-facts.json next to the database, where both doors' scans find it. Each unit's
// facts are cached (mpnanny-facts.units/) with the files they came from, so that a rebuild
// parses only the units whose command or files changed.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_FACTSPASS_H
#define MPNANNY_TOOLS_FACTSPASS_H

#include "Scanner.h"
#include "clang/Tooling/CompilationDatabase.h"
#include <string>
#include <vector>

namespace mpnanny::check {

/// The collector's name: a clang-tidy check registered only in mpnanny-check and the MCP
/// server (not in the plugin), outside the mpnanny-* glob, so that no scan runs it unasked.
inline constexpr const char *FactsCollectorName = "project-facts";

struct FactsUpdate {
  std::string Path;                  ///< the facts file written
  unsigned Parsed = 0;               ///< units read again
  unsigned Reused = 0;               ///< units whose cached facts were still valid
  unsigned Units = 0;                ///< units merged (those of earlier runs included)
  std::vector<std::string> Problems; ///< files whose facts could not be read
};

/// The facts file for a build folder: BuildDir/mpnanny-facts.json.
std::string factsFileFor(const std::string &BuildDir);

/// Brings the facts file at Path up to date for Files (Commands[i] are Files[i]'s), parsing
/// only the units that changed, Jobs at a time. With Whole set, Files are the whole project
/// and the cached units of files no longer in it are dropped. ScanOptions give the rules
/// and the like; the checks they name are replaced by the collector.
FactsUpdate updateFacts(const std::string &Path, const std::vector<std::string> &Files,
                        const std::vector<std::vector<clang::tooling::CompileCommand>> &Commands,
                        const ScanOptions &Options, unsigned Jobs, const ScanSettings &Settings,
                        bool Whole);

} // namespace mpnanny::check

#endif
