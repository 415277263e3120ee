//===--- Pages.h - mpnanny-check ---------------------------------*- C++ -*-===//
//
// The knowledge pages (knowledge/mpnanny-<check>.md) as the tool shows them:
// whole for --explain and SARIF help, their first line for --list-checks, one
// section for SARIF's fullDescription.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_PAGES_H
#define MPNANNY_TOOLS_PAGES_H

#include <optional>
#include <string>

namespace mpnanny::check {

/// $MPNANNY_KNOWLEDGE, else the installed pages, else the source tree's.
std::string knowledgeDir();

/// The page of a check ("mpnanny-risky-op" or "risky-op"), if there is one.
std::optional<std::string> pageOf(const std::string &Check);

/// The first line of prose after the title: the page's one-line summary.
std::string summaryOf(const std::string &Page);

/// The text of a `## Heading` section, without its heading, trimmed.
std::string sectionOf(const std::string &Page, const std::string &Heading);

} // namespace mpnanny::check

#endif
