//===--- ToolGroups.h - mpnanny-mcp ------------------------------*- C++ -*-===//
//
// The tools of each group, as makeTools (Tools.cpp) lists them: the scan (ScanTools.cpp),
// the knowledge pages (KnowledgeTools.cpp) and the training runs (RunTools.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_MCP_TOOLGROUPS_H
#define MPNANNY_TOOLS_MCP_TOOLGROUPS_H

#include "Protocol.h"
#include "Sandbox.h"
#include "Tools.h"

namespace mpnanny::mcp {

/// The three tools that scan, sharing one scanner. The sandbox must outlive them.
struct ScanTools {
  Tool ScanFile, ScanProject, SuggestFix;
};
ScanTools scanTools(const Sandbox &Box, const Settings &S);

Tool explainCheckTool();
Tool listChecksTool();

/// The run tools read databases under the sandbox's roots only; it must outlive them.
Tool queryAlertsTool(const Sandbox &Box);
Tool runSummaryTool(const Sandbox &Box);
Tool siteVerdictsTool(const Sandbox &Box);

} // namespace mpnanny::mcp

#endif
