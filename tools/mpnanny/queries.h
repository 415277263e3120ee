// The questions the CLI, the report and the MCP server ask of a run, answered as JSON so that
// every front end (table, CSV, HTML, an agent) formats the same facts. Every row carries the
// rank it came from.
#ifndef MPNANNY_TOOLS_QUERIES_H
#define MPNANNY_TOOLS_QUERIES_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "MetricsSchema.h"
#include "Vocabulary.h"
#include "database.h"

namespace mpnanny::query {

/// The stored precision as the tools show it, upper case ("FP16"), whatever the case stored.
std::string precision_name(const std::string& precision);
/// The label of a half format ("FP16", "BF16").
std::string precision_label(vocab::HalfFormat format);
/// The half format a run was judged against: the stored name in any case; fp16 when it names
/// neither.
vocab::HalfFormat judged_format(const std::string& precision);
/// Largest finite value of the precision a run was judged against.
double precision_max(const std::string& precision);

/// One object per database: run metadata, steps, alert counts, the first ERROR, the worst sites
/// by headroom (precision max / max |x|), and the loss-scale history in one line.
nlohmann::json summary(const Databases& databases, int worst_sites = 5);

/// What the ranks of a data-parallel run say together (issue 28), or null when the databases are
/// not ranks of one process group (every run has world_size 1):
///   origin   where a NaN, Inf or overflow first entered the gradients: the step, the ranks whose
///            own gradient was bad before the all-reduce (kind, parameter, and the first op at that
///            step whose output was bad in the same way, with its source line), the ranks that
///            received it, and which of those have bad `reduced_gradient` rows at that step; null
///            when no rank's gradient went bad. `text` says it in one line.
///   stopped  the ranks that stopped before the others (their run did not close while another's
///            did, their last step is behind, or they left no database here), with their last
///            step; empty when none did.
/// The origin step comes from the `rank_agreement` table, which every rank writes for the whole
/// group; files without it fall back to each rank's `gradient` rows.
nlohmann::json rank_group(const Databases& databases);

/// The alert severities, most severe first, as the CLI and the MCP server offer them.
std::vector<std::string> severity_names();
/// "ERROR, WARNING or INFO": the choices of a --severity option, for its messages.
std::string severity_choices();

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
/// The verdicts of one database's run (empty when it has no site_verdicts table), most urgent
/// verdict first (the vocabulary's order), then by place.
nlohmann::json site_verdicts(const Database& database);

struct RunVerdicts {
  int64_t run_id = 0;
  std::vector<SiteVerdictRow> verdicts;
};
/// The verdicts of the newest run in any SQLite file that holds a site_verdicts table (a metrics.db,
/// or the table alone). Throws Error: "cannot open 'FILE': ...", "cannot read 'FILE': ...", or
/// "'FILE' holds no verification data ...".
RunVerdicts newest_site_verdicts(const std::string& path);

/// `S` names a site when it is FILE:LINE (FILE matched as a path suffix), a function (substring),
/// a parameter name, or an op ("softmax" or "aten::softmax").
bool site_matches(const std::string& s, const std::string& file, int64_t line, const std::string& function,
                  const std::string& name, const std::string& op);

/// "file.cpp:42" with the directories dropped, or the parameter name, or the op.
std::string site_label(const nlohmann::json& row);

}  // namespace mpnanny::query

#endif  // MPNANNY_TOOLS_QUERIES_H
