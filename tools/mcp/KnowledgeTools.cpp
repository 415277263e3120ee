//===--- KnowledgeTools.cpp - mpnanny-mcp ----------------------------------===//
//
// The knowledge pages as tools (explain_check, list_checks) and as resources, found and
// read through the lookup mpnanny-check shares (common/KnowledgePages.h).
//
//===----------------------------------------------------------------------===//
#include "KnowledgePages.h"
#include "Scanner.h"
#include "ToolGroups.h"
#include "ToolKit.h"
#include "Tools.h"
#include "Vocabulary.h"

#include <algorithm>
#include <cctype>
#include <set>

using nlohmann::json;

namespace mpnanny::mcp {

namespace {

std::string readPage(const std::string &File) {
  // Pages are ours, not the user's, but a page is still bounded like anything read.
  const size_t Max = 1u << 20;
  auto Text = readBounded(File, Max);
  if (!Text || Text->size() > Max)
    throw RpcError(code::Internal, "cannot read the knowledge page '" + File + "' (at most " +
                                       std::to_string(Max) + " bytes)");
  return *Text;
}

json explainCheck(const json &Args) {
  const std::string Tool = "explain_check";
  std::string Name = reqString(Args, Tool, "check");
  if (Name.size() > 100 || !std::all_of(Name.begin(), Name.end(), [](char C) {
        return std::isalnum(static_cast<unsigned char>(C)) || C == '-' || C == '_';
      }))
    invalid(Tool + ": 'check' is a check name (mpnanny-log-softmax) or an alert type (OVERFLOW)",
            "invalid_argument");
  auto P = knowledge::findPage(Name);
  if (!P) {
    std::string Known;
    for (const auto &Q : knowledge::pages())
      Known += (Known.empty() ? "" : ", ") + Q.Name;
    invalid(Tool + ": no knowledge page for '" + Name + "' (pages: " + Known + ")", "not_found");
  }
  std::string Text = readPage(P->File);
  return {{"name", P->Name},
          {"uri", "mpnanny://knowledge/" + P->Name},
          {"title", knowledge::titleOf(Text, P->Name)},
          {"summary", knowledge::summaryOf(Text)},
          {"why", knowledge::sectionOf(Text, "Why")},
          {"fixed_code", knowledge::sectionOf(Text, "Fixed code")},
          {"markdown", Text}};
}

json listChecks(const json &) {
  const std::string AlertPrefix(vocab::alertPagePrefix());
  json Checks = json::array(), Alerts = json::array();
  std::set<std::string> Listed;
  for (const auto &Name : check::checkNames()) {
    auto P = knowledge::findPage(Name);
    json Entry = {{"name", Name}, {"has_page", P.has_value()}, {"summary", ""}};
    if (P) {
      Entry["summary"] = knowledge::summaryOf(readPage(P->File));
      Entry["uri"] = "mpnanny://knowledge/" + P->Name;
      Listed.insert(P->Name);
    }
    Checks.push_back(Entry);
  }
  for (const auto &P : knowledge::pages()) {
    if (P.Name.rfind(AlertPrefix, 0) == 0)
      Alerts.push_back({{"type", P.Name.substr(AlertPrefix.size())},
                        {"name", P.Name},
                        {"summary", knowledge::summaryOf(readPage(P.File))},
                        {"uri", "mpnanny://knowledge/" + P.Name}});
  }
  return {{"checks", Checks}, {"alerts", Alerts}};
}

} // namespace

Tool explainCheckTool() {
  return {"explain_check",
          "Explain a check or a runtime alert",
          "The knowledge page of a check (mpnanny-log-softmax) or a runtime alert type (OVERFLOW): "
          "what it flags, why (with the number), bad code, fixed code, the run-time symptom, "
          "references.",
          objectSchema(
              {{"check",
                str("Check name (mpnanny-log-softmax or log-softmax) or alert type (OVERFLOW)")}},
              {"check"}),
          objectSchema({{"name", str("")},
                        {"uri", str("the same page as a resource")},
                        {"title", str("")},
                        {"summary", str("")},
                        {"why", str("")},
                        {"fixed_code", str("")},
                        {"markdown", str("the whole page")}},
                       {"name", "uri", "markdown"}),
          true,
          explainCheck};
}

Tool listChecksTool() {
  return {"list_checks",
          "List the checks and alert pages",
          "Every mpnanny check with its one-line summary, and the runtime alert types that have a "
          "page.",
          objectSchema(json::object()),
          objectSchema({{"checks",
                         {{"type", "array"},
                          {"items", objectSchema({{"name", str("")},
                                                  {"summary", str("")},
                                                  {"has_page", {{"type", "boolean"}}},
                                                  {"uri", str("")}},
                                                 {"name", "summary", "has_page"})}}},
                        {"alerts", rowsSchema()}},
                       {"checks", "alerts"}),
          true,
          listChecks};
}

std::vector<Resource> knowledgeResources() {
  std::vector<Resource> Out;
  for (const auto &P : knowledge::pages()) {
    std::string Text;
    try {
      Text = readPage(P.File);
    } catch (const RpcError &) {
      continue;
    }
    std::string File = P.File;
    Out.push_back({"mpnanny://knowledge/" + P.Name, P.Name, knowledge::titleOf(Text, P.Name),
                   knowledge::summaryOf(Text), "text/markdown", [File] { return readPage(File); }});
  }
  return Out;
}

} // namespace mpnanny::mcp
