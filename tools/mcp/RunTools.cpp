//===--- RunTools.cpp - mpnanny-mcp ----------------------------------------===//
//
// What a training run recorded, as tools: query_alerts, run_summary and site_verdicts,
// through the CLI's run queries (mpnanny_query), over databases under the server's roots.
//
//===----------------------------------------------------------------------===//
#include "ToolGroups.h"
#include "ToolKit.h"
#include "Vocabulary.h"
#include "database.h"
#include "queries.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <algorithm>
#include <cctype>
#include <map>

using nlohmann::json;

namespace mpnanny::mcp {

namespace {

query::Databases openRuns(const Sandbox &Box, const json &Args, const std::string &Tool) {
  std::string Spec = reqString(Args, Tool, "db");
  // FILE#RUN picks a run; the path part is what must lie under a root.
  std::string Path = Spec, Run;
  if (auto Hash = Spec.rfind('#'); Hash != std::string::npos && Hash + 1 < Spec.size() &&
                                   std::all_of(Spec.begin() + Hash + 1, Spec.end(), ::isdigit)) {
    Path = Spec.substr(0, Hash);
    Run = Spec.substr(Hash);
  }
  std::string Resolved =
      Box.resolve(Path, Sandbox::Kind::Any, Tool + ": db", /*SizeBounded=*/false);
  std::vector<std::string> Files;
  try {
    Files = query::database_files(Resolved + Run);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  // A folder under a root may hold links that lead out of it: each file is checked before
  // anything opens it, so that not even an error message tells what lies outside.
  for (const auto &File : Files) {
    const std::string FilePath = Run.empty() ? File : File.substr(0, File.size() - Run.size());
    llvm::SmallString<256> Real;
    if (llvm::sys::fs::real_path(FilePath, Real) || !Box.contains(std::string(Real)))
      invalid(Tool + ": '" + FilePath + "' does not resolve to a file under the allowed roots",
              "outside_root");
  }
  query::Databases Dbs;
  try {
    Dbs = query::open_databases(Files);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  return Dbs;
}

/// Rows a result may carry: at most Limit, and no more than fit in a response. A result is sent
/// twice (as text and as structuredContent, the text with its quotes escaped), and a response
/// over Limits.MaxResponseBytes (4 MiB) is refused whole; 1 MiB of rows keeps it well under that,
/// and the rows left out are reported as truncated instead.
json rowsWithin(const json &All, size_t Limit) {
  constexpr size_t RowBytes = 1u << 20;
  json Rows = json::array();
  size_t Bytes = 0;
  for (size_t I = 0; I < All.size() && I < Limit; ++I) {
    Bytes += All[I].dump().size();
    if (Bytes > RowBytes && !Rows.empty())
      break;
    Rows.push_back(All[I]);
  }
  return Rows;
}

json databasesJson(const query::Databases &Dbs) {
  json Out = json::array();
  for (const auto &D : Dbs)
    Out.push_back({{"file", D->path()}, {"rank", D->rank()}, {"run_id", D->run_id()}});
  return Out;
}

json queryAlerts(const Sandbox &Box, const json &Args) {
  const std::string Tool = "query_alerts";
  auto Dbs = openRuns(Box, Args, Tool);
  query::AlertFilter Filter;
  // Names are matched as the CLI matches them: in any case.
  Filter.severity = upperOpt(optString(Args, Tool, "severity"));
  if (Filter.severity && !vocab::parse<vocab::AlertSeverity>(*Filter.severity))
    invalid(Tool + ": severity is " + query::severity_choices());
  Filter.type = upperOpt(optString(Args, Tool, "type"));
  if (Filter.type)
    if (const auto Unknown = query::unknown_alert_type(*Filter.type))
      invalid(Tool + ": " + *Unknown);
  Filter.site = optString(Args, Tool, "site");
  Filter.first_step = optInt(Args, Tool, "first_step");
  Filter.last_step = optInt(Args, Tool, "last_step");
  size_t Limit = static_cast<size_t>(optInt(Args, Tool, "limit").value_or(200));
  json All;
  try {
    All = query::alerts(Dbs, Filter);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  json Rows = rowsWithin(All, Limit);
  return {{"databases", databasesJson(Dbs)},
          {"alerts", Rows},
          {"total", All.size()},
          {"truncated", All.size() > Rows.size()}};
}

json runSummary(const Sandbox &Box, const json &Args) {
  const std::string Tool = "run_summary";
  auto Dbs = openRuns(Box, Args, Tool);
  int Worst = static_cast<int>(optInt(Args, Tool, "worst_sites").value_or(5));
  json Runs, Group;
  try {
    Runs = query::summary(Dbs, Worst);
    Group = query::rank_group(Dbs);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  if (!Runs.is_array())
    Runs = json::array({Runs});
  // Always present, so that an agent need not tell "not a group" from "nothing went wrong".
  return {{"databases", databasesJson(Dbs)},
          {"runs", Runs},
          {"origin", Group.is_null() ? json() : Group["origin"]},
          {"stopped", Group.is_null() ? json::array() : Group["stopped"]}};
}

json siteVerdicts(const Sandbox &Box, const json &Args) {
  const std::string Tool = "site_verdicts";
  auto Dbs = openRuns(Box, Args, Tool);
  size_t Limit = static_cast<size_t>(optInt(Args, Tool, "limit").value_or(500));
  auto Verdict = upperOpt(optString(Args, Tool, "verdict"));
  if (Verdict && !vocab::parse<vocab::Verdict>(*Verdict))
    invalid(Tool + ": no verdict '" + *Verdict +
            "' (verdicts: " + vocab::joinedNames<vocab::Verdict>() + ")");
  json Result;
  try {
    Result = query::sites(Dbs);
  } catch (const std::exception &E) {
    invalid(Tool + ": " + E.what(), "unreadable");
  }
  bool Any = false;
  for (const auto &A : Result["available"])
    Any = Any || A.value("verification", false);
  json Matching = json::array();
  for (const auto &R : Result["verdicts"]) {
    if (Verdict && R.value("verdict", json()).is_string() && R["verdict"] != *Verdict)
      continue;
    Matching.push_back(R);
  }
  const size_t Total = Matching.size();
  json Rows = rowsWithin(Matching, Limit);
  std::map<std::string, size_t> Counts;
  for (const auto &R : Result["verdicts"])
    if (R.contains("verdict") && R["verdict"].is_string())
      ++Counts[R["verdict"].get<std::string>()];
  return {
      {"databases", databasesJson(Dbs)},
      {"verification_data", Any},
      {"message", Any ? std::to_string(Result["verdicts"].size()) + " verdict(s)"
                      : "no verification data: the run was not made with MPNANNY_VERIFY=1 and "
                        "MPNANNY_SITES=<sites.json> (mpnanny-check --export-sites), so no static "
                        "finding was checked at run time"},
      {"counts", Counts},
      {"verdicts", Rows},
      {"total", Total},
      {"truncated", Total > Rows.size()}};
}

/// The metrics databases a result read, as every run tool reports them.
json databasesSchema() {
  return {
      {"type", "array"},
      {"items", objectSchema({{"file", str("")}, {"rank", integer("")}, {"run_id", integer("")}})}};
}

json dbArgument() {
  return str("A metrics database (nanny_logs/metrics.db), a folder of them (one per rank), or "
             "FILE#RUN; under the server's roots");
}

} // namespace

Tool queryAlertsTool(const Sandbox &Box) {
  return {"query_alerts",
          "Alerts of a training run",
          "The runtime's alerts (" + vocab::joinedNames<vocab::AlertType>() +
              ") with the step, op, tensor, source line, value and threshold, in step order.",
          objectSchema({{"db", dbArgument()},
                        {"severity", {{"type", "string"}, {"enum", query::severity_names()}}},
                        {"type", str("Alert type, e.g. OVERFLOW")},
                        {"site", str("FILE:LINE, a function (substring), a parameter or an op")},
                        {"first_step", integer("", 0, INT64_MAX)},
                        {"last_step", integer("", 0, INT64_MAX)},
                        {"limit", integer("At most this many alerts (default 200)", 1, 10000)}},
                       {"db"}),
          objectSchema({{"databases", databasesSchema()},
                        {"alerts", rowsSchema()},
                        {"total", integer("")},
                        {"truncated", {{"type", "boolean"}}}},
                       {"databases", "alerts", "total", "truncated"}),
          true,
          [B = &Box](const json &A) { return queryAlerts(*B, A); }};
}

Tool runSummaryTool(const Sandbox &Box) {
  return {"run_summary",
          "Summary of a training run",
          "Run metadata (precision, torch version), steps seen and traced, alert counts by type "
          "and severity, the first ERROR, the sites with the least fp16/bf16 headroom, and the "
          "loss-scale history. For a folder of rank files (data-parallel training): `origin`, "
          "where a NaN/Inf/overflow first entered a rank's gradient before the all-reduce (step, "
          "rank, parameter, op and source line, the ranks that received it; `text` says it in one "
          "line), and `stopped`, the ranks that stopped before the others, with their last step.",
          objectSchema({{"db", dbArgument()},
                        {"worst_sites", integer("How many worst sites (default 5)", 0, 100)}},
                       {"db"}),
          objectSchema({{"databases", databasesSchema()},
                        {"runs", rowsSchema()},
                        {"origin", {{"type", {"object", "null"}}}},
                        {"stopped", rowsSchema()}},
                       {"databases", "runs", "origin", "stopped"}),
          true,
          [B = &Box](const json &A) { return runSummary(*B, A); }};
}

Tool siteVerdictsTool(const Sandbox &Box) {
  return {"site_verdicts",
          "Which static findings were confirmed at run time",
          "For a run made with MPNANNY_VERIFY=1 and the sites file of mpnanny-check: each static "
          "finding's verdict (" +
              vocab::joinedNames<vocab::Verdict>() + ") with its evidence.",
          objectSchema({{"db", dbArgument()},
                        {"verdict",
                         {{"type", "string"},
                          {"enum", vocab::names<vocab::Verdict>()},
                          {"description", "Only this verdict"}}},
                        {"limit", integer("At most this many verdicts (default 500)", 1, 10000)}},
                       {"db"}),
          objectSchema(
              {{"databases", databasesSchema()},
               {"verification_data", {{"type", "boolean"}}},
               {"message", str("")},
               {"counts", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
               {"verdicts", rowsSchema()},
               {"total", integer("")},
               {"truncated", {{"type", "boolean"}}}},
              {"databases", "verification_data", "message", "verdicts"}),
          true,
          [B = &Box](const json &A) { return siteVerdicts(*B, A); }};
}

} // namespace mpnanny::mcp
