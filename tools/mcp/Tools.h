//===--- Tools.h - mpnanny-mcp -----------------------------------*- C++ -*-===//
//
// What the server offers: the tools (scan, explain, fix, query a run), the
// knowledge pages as resources, and the two prompts that walk an agent through
// scan, explain, fix and verify.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_MCP_TOOLS_H
#define MPNANNY_TOOLS_MCP_TOOLS_H

#include "Protocol.h"
#include "Sandbox.h"
#include <string>
#include <vector>

namespace mpnanny::mcp {

struct Settings {
  std::string RulesDir; ///< "" uses the bundled rules
  unsigned Jobs = 1;    ///< files of a project scanned at once
  size_t MaxFindings = 500;
  size_t MaxProjectFiles = 200;
};

/// The sandbox must outlive the tools.
std::vector<Tool> makeTools(const Sandbox &Box, const Settings &S);
std::vector<Prompt> makePrompts();
/// The pages under knowledge/, read afresh on each call (a page edited while the
/// server runs is served as it is now).
std::vector<Resource> knowledgeResources();
std::string serverInstructions();

} // namespace mpnanny::mcp

#endif
