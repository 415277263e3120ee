//===--- Sarif.cpp - mpnanny-check -----------------------------------------===//
#include "Sarif.h"

#include "Pages.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

namespace mpnanny::check {

/// Percent-encodes what RFC 3986 does not allow in a path ('/' stays).
static std::string encodePath(llvm::StringRef Path) {
  std::string Out;
  for (unsigned char C : Path) {
    if (std::isalnum(C) || llvm::StringRef("/-._~!$&'()*+,;=:@").contains(C)) {
      Out += static_cast<char>(C);
    } else {
      char Buf[4];
      std::snprintf(Buf, sizeof Buf, "%%%02X", C);
      Out += Buf;
    }
  }
  return Out;
}

static const char *const SourceRoot = "%SRCROOT%";

static nlohmann::json artifactLocation(const std::string &File, const std::string &Root) {
  llvm::StringRef F(File);
  if (!Root.empty() && F.starts_with(Root) && F.size() > Root.size() && F[Root.size()] == '/')
    return {{"uri", encodePath(F.drop_front(Root.size() + 1))}, {"uriBaseId", SourceRoot}};
  return {{"uri", "file://" + encodePath(F)}};
}

/// The text of a line with its whitespace collapsed: what a finding's line looks like
/// wherever it moves, and however it is re-indented.
static std::string normalizedLine(const std::string &File, unsigned Line) {
  static std::map<std::string, std::vector<std::string>> Cache;
  auto It = Cache.find(File);
  if (It == Cache.end()) {
    std::vector<std::string> Lines;
    if (auto Buffer = llvm::MemoryBuffer::getFile(File)) {
      llvm::SmallVector<llvm::StringRef, 0> Parts;
      (*Buffer)->getBuffer().split(Parts, '\n');
      for (llvm::StringRef P : Parts) {
        std::string Collapsed;
        for (char C : P.trim()) {
          bool Space = std::isspace(static_cast<unsigned char>(C));
          if (Space && !Collapsed.empty() && Collapsed.back() == ' ')
            continue;
          Collapsed += Space ? ' ' : C;
        }
        Lines.push_back(std::move(Collapsed));
      }
    }
    It = Cache.emplace(File, std::move(Lines)).first;
  }
  return Line >= 1 && Line <= It->second.size() ? It->second[Line - 1] : std::string();
}

/// FNV-1a 64 as 16 hex digits, like the site id: the same on every platform and run.
static std::string fnv1a(llvm::StringRef S) {
  uint64_t H = 1469598103934665603ULL;
  for (unsigned char C : S) {
    H ^= C;
    H *= 1099511628211ULL;
  }
  char Buf[17];
  std::snprintf(Buf, sizeof Buf, "%016llx", static_cast<unsigned long long>(H));
  return Buf;
}

static nlohmann::json physicalLocation(const Location &L, const std::string &Root) {
  nlohmann::json Region = {{"startLine", L.Line ? L.Line : 1}};
  if (L.Column)
    Region["startColumn"] = L.Column;
  return {{"artifactLocation", artifactLocation(L.File, Root)}, {"region", Region}};
}

/// "mpnanny-risky-op" -> "RiskyOp": SARIF's name is meant for people and tools
/// that show one word.
static std::string ruleName(llvm::StringRef Check) {
  Check.consume_front("mpnanny-");
  std::string Out;
  bool Up = true;
  for (char C : Check) {
    if (C == '-') {
      Up = true;
      continue;
    }
    Out += Up ? static_cast<char>(std::toupper(static_cast<unsigned char>(C))) : C;
    Up = false;
  }
  return Out;
}

static nlohmann::json ruleOf(const std::string &Check) {
  nlohmann::json Rule = {
      {"id", Check},
      {"name", ruleName(Check)},
      {"defaultConfiguration", {{"level", vocab::name(vocab::Severity::Warning)}}}};
  std::optional<std::string> Page = pageOf(Check);
  if (!Page) {
    Rule["shortDescription"] = {{"text", Check}};
    return Rule;
  }
  std::string Summary = summaryOf(*Page);
  std::string Why = sectionOf(*Page, "Why");
  std::string Flags = sectionOf(*Page, "What it flags");
  Rule["shortDescription"] = {{"text", Summary.empty() ? Check : Summary}};
  std::string Full = Summary;
  if (!Why.empty())
    Full += "\n\n" + Why;
  Rule["fullDescription"] = {{"text", Full}};
  Rule["help"] = {{"text", *Page}, {"markdown", *Page}};
  return Rule;
}

static nlohmann::json fixOf(const Finding &F, const std::string &Root) {
  // One artifactChange per file, in the order the edits come.
  std::map<std::string, nlohmann::json> ByFile;
  std::vector<std::string> Order;
  for (const Edit &E : F.Edits) {
    if (!ByFile.count(E.File)) {
      Order.push_back(E.File);
      ByFile[E.File] = nlohmann::json::array();
    }
    nlohmann::json Deleted = {{"startLine", E.Begin.Line},
                              {"startColumn", E.Begin.Column},
                              {"endLine", E.End.Line},
                              {"endColumn", E.End.Column}};
    nlohmann::json R = {{"deletedRegion", Deleted}};
    R["insertedContent"] = {{"text", E.Text}};
    ByFile[E.File].push_back(R);
  }
  nlohmann::json Changes = nlohmann::json::array();
  for (const auto &File : Order)
    Changes.push_back(
        {{"artifactLocation", artifactLocation(File, Root)}, {"replacements", ByFile[File]}});
  nlohmann::json Fix = {{"artifactChanges", Changes}};
  Fix["description"] = {{"text", F.Fix.empty() ? "apply the exact rewrite" : F.Fix}};
  return Fix;
}

nlohmann::json toSarif(const std::vector<Finding> &Findings, const SarifRun &Run) {
  const std::string &Root = Run.WorkingDirectory;
  std::vector<std::string> Checks = Run.Checks;
  for (const auto &F : Findings)
    if (std::find(Checks.begin(), Checks.end(), F.Check) == Checks.end())
      Checks.push_back(F.Check);
  std::map<std::string, unsigned> RuleIndex;
  nlohmann::json Rules = nlohmann::json::array();
  for (const auto &C : Checks) {
    RuleIndex[C] = static_cast<unsigned>(Rules.size());
    Rules.push_back(ruleOf(C));
  }

  nlohmann::json Results = nlohmann::json::array();
  // How often each (check, file, line text) came before: two findings on identical lines
  // differ by their rank, which, unlike a line number, survives lines added above them.
  std::map<std::string, unsigned> LineRank;
  for (const auto &F : Findings) {
    nlohmann::json Location = {{"physicalLocation", physicalLocation(F.Where, Root)}};
    if (!F.Function.empty())
      Location["logicalLocations"] = {{{"fullyQualifiedName", F.Function}, {"kind", "function"}}};
    nlohmann::json Result = {
        {"ruleId", F.Check},
        {"ruleIndex", RuleIndex[F.Check]},
        // SARIF's result levels are the vocabulary's severities.
        {"level",
         vocab::name(vocab::parse<vocab::Severity>(F.Severity).value_or(vocab::Severity::Warning))},
        {"message", {{"text", F.Message}}},
        {"locations", {Location}}};
    // SARIF wants related locations unique; a check may attach the same note twice.
    nlohmann::json Related = nlohmann::json::array();
    std::set<std::string> Seen;
    for (const auto &N : F.Notes) {
      nlohmann::json R = {{"physicalLocation", physicalLocation(N.Where, Root)},
                          {"message", {{"text", N.Message}}}};
      if (!Seen.insert(R.dump()).second)
        continue;
      R["id"] = Related.size() + 1;
      Related.push_back(R);
    }
    if (!Related.empty())
      Result["relatedLocations"] = Related;
    if (!F.Edits.empty())
      Result["fixes"] = {fixOf(F, Root)};
    // Code scanning matches results across runs by these: the site id (check, file, function,
    // expression), and the line hash (check, the path as written above, the line's normalized
    // text and its rank among identical ones in the file); neither holds a line number.
    std::string Uri = artifactLocation(F.Where.File, Root)["uri"].get<std::string>();
    std::string LineKey = F.Check + "\n" + Uri + "\n" + normalizedLine(F.Where.File, F.Where.Line);
    unsigned Rank = LineRank[LineKey]++;
    Result["partialFingerprints"] = {
        {"mpnannySiteId/v1", F.SiteId},
        {"mpnannyLineHash/v1", fnv1a(LineKey + "\n" + std::to_string(Rank))}};
    nlohmann::json Properties = {{"siteId", F.SiteId}};
    if (!F.Risk.empty())
      Properties["risk"] = F.Risk;
    if (!F.Precision.empty())
      Properties["precision"] = F.Precision;
    if (!F.AtenOps.empty())
      Properties["atenOps"] = F.AtenOps;
    if (!F.Expression.empty())
      Properties["expression"] = F.Expression;
    Result["properties"] = Properties;
    Results.push_back(Result);
  }

  nlohmann::json Notifications = nlohmann::json::array();
  for (const auto &P : Run.Problems)
    Notifications.push_back(
        {{"level", vocab::name(vocab::Severity::Error)}, {"message", {{"text", P}}}});
  nlohmann::json Invocation = {{"executionSuccessful", Run.Problems.empty()}};
  if (!Notifications.empty())
    Invocation["toolExecutionNotifications"] = Notifications;

  nlohmann::json Driver = {{"name", "mpnanny-check"},
                           {"version", Run.ToolVersion},
                           {"semanticVersion", Run.ToolVersion},
                           {"rules", Rules}};
  nlohmann::json RunJson = {
      {"tool", {{"driver", Driver}}}, {"invocations", {Invocation}}, {"results", Results}};
  if (!Root.empty())
    RunJson["originalUriBaseIds"] = {{SourceRoot, {{"uri", "file://" + encodePath(Root) + "/"}}}};
  return {{"$schema", "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                      "sarif-schema-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", {RunJson}}};
}

} // namespace mpnanny::check
