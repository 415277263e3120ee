//===--- Tools.cpp - mpnanny-mcp -------------------------------------------===//
//
// The server's tools, one group a file (ScanTools, KnowledgeTools, RunTools), listed
// here in the order tools/list gives them, each behind its input schema.
//
//===----------------------------------------------------------------------===//
#include "Tools.h"

#include "ToolGroups.h"
#include "ToolKit.h"

using nlohmann::json;

namespace mpnanny::mcp {

namespace {

/// The tool as served: no argument its schema does not list, integers within their ranges.
Tool checked(Tool T) {
  auto Run = T.Run;
  json Schema = T.InputSchema;
  std::string Name = T.Name;
  T.InputSchema["additionalProperties"] = false;
  T.Run = [Run, Schema, Name](const json &Args) {
    checkArguments(Args, Name, Schema);
    return Run(Args);
  };
  return T;
}

} // namespace

std::vector<Tool> makeTools(const Sandbox &Box, const Settings &S) {
  ScanTools Scan = scanTools(Box, S);
  std::vector<Tool> Tools;
  for (const Tool &T :
       {Scan.ScanFile, Scan.ScanProject, explainCheckTool(), listChecksTool(), Scan.SuggestFix,
        queryAlertsTool(Box), runSummaryTool(Box), siteVerdictsTool(Box)})
    Tools.push_back(checked(T));
  return Tools;
}

} // namespace mpnanny::mcp
