//===--- KnowledgePages.h - mpnanny ------------------------------*- C++ -*-===//
//
// The human pages under knowledge/: one per check (mpnanny-<check>.md) and per runtime alert
// type (alert-<TYPE>.md). mpnanny-check (--explain, --list-checks, SARIF help) and the MCP
// server (explain_check, list_checks, resources) find and read them here.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_COMMON_KNOWLEDGEPAGES_H
#define MPNANNY_COMMON_KNOWLEDGEPAGES_H

#include <optional>
#include <string>
#include <vector>

namespace mpnanny::knowledge {

/// $MPNANNY_KNOWLEDGE, else the installed pages, else the source tree's.
std::string directory();

struct Page {
  std::string Name; ///< the file name without .md: mpnanny-log-softmax, alert-OVERFLOW
  std::string File; ///< its path
};

/// Every page of the directory (README.md is not one), by name.
std::vector<Page> pages();

/// The page of a check (mpnanny-log-softmax or log-softmax), an alert type (OVERFLOW, in any
/// case) or a page name, among pages().
std::optional<Page> findPage(const std::string &Name);

/// The text of a check's page ("mpnanny-risky-op" or "risky-op"), if there is one.
std::optional<std::string> checkPage(const std::string &Check);

/// The first line of prose after the title: the page's one-line summary.
std::string summaryOf(const std::string &Page);

/// The text of a `## Heading` section, without its heading, trimmed.
std::string sectionOf(const std::string &Page, const std::string &Heading);

/// The page's `# Title`, or Fallback when it has none.
std::string titleOf(const std::string &Page, const std::string &Fallback);

} // namespace mpnanny::knowledge

#endif
