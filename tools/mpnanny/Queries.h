// The questions the CLI, the report and the MCP server ask of a run, answered as JSON so that
// every front end (table, CSV, HTML, an agent) formats the same facts. Every row carries the
// rank it came from.
#ifndef MPNANNY_TOOLS_QUERIES_H
#define MPNANNY_TOOLS_QUERIES_H

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "Database.h"

namespace mpnanny::query {

/// "FP16" / "BF16" whatever the case the runtime stored.
std::string precision_name(const std::string& precision);
/// Largest finite value of the precision a run was judged against ("FP16" or "BF16").
double precision_max(const std::string& precision);

/// One object per database: run metadata, steps, alert counts, the first ERROR, the worst sites
/// by headroom (precision max / max |x|), and the loss-scale history in one line.
nlohmann::json summary(const Databases& databases, int worst_sites = 5);

struct AlertFilter {
  std::optional<std::string> severity;  ///< ERROR | WARNING | INFO
  std::optional<std::string> type;      ///< NAN, OVERFLOW, ...
  std::optional<std::string> site;      ///< see site_matches()
  std::optional<int64_t> first_step, last_step;
};
nlohmann::json alerts(const Databases& databases, const AlertFilter& filter);
/// Why `type` is not an alert type, naming the ones there are; nothing when it is one. A filter
/// on a misspelt type would otherwise answer "no alerts" for a run full of them.
std::optional<std::string> unknown_alert_type(const std::string& type);

struct StatsFilter {
  int64_t step = 0;
  std::optional<std::string> site;
  std::optional<std::string> param;  ///< a parameter name, or a prefix ending at a dot ("fc1" -> fc1.weight)
};
/// Every observed tensor at one step, in execution order.
nlohmann::json stats(const Databases& databases, const StatsFilter& filter);
/// The traced steps of the first database (to suggest one when `stats --step` hits nothing).
std::vector<int64_t> traced_steps(const Database& database);

/// Verification verdicts (table site_verdicts, written by MPNANNY_VERIFY=1 runs). `available`
/// lists, per database, whether the table exists.
nlohmann::json sites(const Databases& databases);
/// The verdicts of one database's run (empty when it has no site_verdicts table).
nlohmann::json site_verdicts(const Database& database);

/// `S` names a site when it is FILE:LINE (FILE matched as a path suffix), a function (substring),
/// a parameter name, or an op ("softmax" or "aten::softmax").
bool site_matches(const std::string& s, const std::string& file, int64_t line, const std::string& function,
                  const std::string& name, const std::string& op);

/// "file.cpp:42" with the directories dropped, or the parameter name, or the op.
std::string site_label(const nlohmann::json& row);

}  // namespace mpnanny::query

#endif  // MPNANNY_TOOLS_QUERIES_H
