//===--- Diff.h - mpnanny-mcp ------------------------------------*- C++ -*-===//
//
// A unified diff of one file before and after a set of replacements, computed
// from the replacements themselves (each changes a known range of lines), so no
// general diff algorithm is needed and the hunks are exactly the fix-its.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_MCP_DIFF_H
#define MPNANNY_TOOLS_MCP_DIFF_H

#include <string>
#include <vector>

namespace mpnanny::mcp {

struct Replacement {
  unsigned Offset = 0, Length = 0;
  std::string Text;
};

/// `--- a/<Label>` / `+++ b/<Label>` and hunks with Context lines around each change.
/// Replacements must not overlap (the caller drops those that do). Empty when nothing
/// changes.
std::string unifiedDiff(const std::string &Label, const std::string &Before,
                        std::vector<Replacement> Replacements, unsigned Context = 3);

} // namespace mpnanny::mcp

#endif
