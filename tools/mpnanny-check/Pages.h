//===--- Pages.h - mpnanny-check ---------------------------------*- C++ -*-===//
//
// The knowledge pages (knowledge/mpnanny-<check>.md) as the tool shows them:
// whole for --explain and SARIF help, their first line for --list-checks, one
// section for SARIF's fullDescription. The lookup is common/'s, which the MCP
// server shares.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_PAGES_H
#define MPNANNY_TOOLS_PAGES_H

#include "KnowledgePages.h"

#include <optional>
#include <string>

namespace mpnanny::check {

/// The page of a check ("mpnanny-risky-op" or "risky-op"), if there is one.
inline std::optional<std::string> pageOf(const std::string &Check) {
  return knowledge::checkPage(Check);
}

using knowledge::sectionOf;
using knowledge::summaryOf;

} // namespace mpnanny::check

#endif
