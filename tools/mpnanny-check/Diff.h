//===--- Diff.h - mpnanny-check ----------------------------------*- C++ -*-===//
//
// --diff and --diff-base: the lines a unified diff adds or changes, per file, so
// that a scan reports only the findings on them (as clang-tidy-diff.py does).
// Reads `git diff -U0` as well as diffs with context, renames, new and deleted
// files; a malformed diff is an error that names its line.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_DIFF_H
#define MPNANNY_TOOLS_DIFF_H

#include "Scan.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mpnanny::check {

/// One file of a diff: its path after the change, as the diff spells it with git's
/// `b/` prefix removed, and the numbers of the lines the change added (1-based).
struct DiffFile {
  std::string Path;
  std::set<unsigned> AddedLines;
};

/// Parses a unified diff. Deleted files (`+++ /dev/null`) are left out; a renamed file
/// is listed under its new name. Name is what error messages call the input
/// (`NAME:LINE: malformed diff: ...`).
llvm::Expected<std::vector<DiffFile>> parseUnifiedDiff(llvm::StringRef Text, llvm::StringRef Name);

/// Runs `git diff -U0 --no-color --no-ext-diff Base` in Directory; stdout, or an error that
/// carries git's message.
llvm::Expected<std::string> gitDiff(const std::string &Base, const std::string &Directory);

/// The top-level folder of the git work tree Directory is in, or "" outside one.
std::string gitTopLevel(const std::string &Directory);

/// Changed lines by absolute, real path.
using ChangedLines = std::map<std::string, std::set<unsigned>>;

/// Finds each diff path on disk: against the git top-level, then each of Roots (the
/// working directory, the compilation database's folder), then as a suffix of one of
/// Known (the database's files). Files that exist nowhere are left out and returned in
/// Missing.
ChangedLines resolveDiffPaths(const std::vector<DiffFile> &Files,
                              const std::vector<std::string> &Roots,
                              const std::vector<std::string> &Known,
                              std::vector<std::string> &Missing);

/// Whether a path names a C/C++ translation unit (.c, .cc, .cpp, .cxx, .c++, .cu, .C).
bool isTranslationUnit(llvm::StringRef Path);

/// The lines a diff changes: read from DiffFile ("" or "-": stdin), or from `git diff -U0 Base`
/// when Base is set, its paths found with resolveDiffPaths (the git top-level, the working
/// directory, the database's folder). The translation units to scan are appended to Scan:
/// with FromDatabase, only those BuildPath's compilation database lists. Files left out are
/// named on stderr.
llvm::Expected<ChangedLines> readChangedLines(const std::string &DiffFile, const std::string &Base,
                                              const std::string &BuildPath, bool FromDatabase,
                                              std::vector<std::string> &Scan);

/// Drops every diagnostic below error level whose place is not a changed line (compile
/// errors stay: they say the scan was incomplete).
void keepChangedLines(std::vector<FileScan> &Scans, const ChangedLines &Changed);

} // namespace mpnanny::check

#endif
