// mpnanny sites: which static findings the run confirmed (MPNANNY_VERIFY=1), with evidence.
#include <iostream>

#include "cli.h"
#include "queries.h"

namespace mpnanny::cli {

namespace {

/// A run made with MPNANNY_VERIFY=1 whose sites file did not load says so in its options; telling
/// its user to set MPNANNY_VERIFY=1 sent them round in a circle.
std::string why_no_verdicts(const query::Databases& databases) {
  for (const auto& database : databases) {
    const nlohmann::json& text = database->run()["options_json"];
    if (!text.is_string()) continue;
    const nlohmann::json options = nlohmann::json::parse(text.get<std::string>(), nullptr, false);
    if (options.is_object() && options.value("verify_requested", false)) {
      return "it was made with MPNANNY_VERIFY=1, but its sites file " +
             options.value("sites_file", std::string("mpnanny-sites.json")) +
             " could not be read or held no site that still matches its source: see the warnings the run printed";
    }
  }
  return "train with MPNANNY_VERIFY=1";
}

}  // namespace

int sites(Args args) {
  const Common common = take_common(args);
  if (!args.finish().empty()) throw UsageError("sites takes no positional argument (use --db)");
  const auto databases = query::open_databases(common.db_specs);
  const nlohmann::json result = query::sites(databases);
  bool any = false;
  for (const auto& entry : result["available"]) any = any || entry["verification"].get<bool>();
  if (!any) std::cerr << "mpnanny: no verification data in this run (" << why_no_verdicts(databases) << ")\n";
  const nlohmann::json& rows = result["verdicts"];
  // The function and the first step are in --format json/csv (and usually in the evidence).
  const auto verdict = [](const nlohmann::json& row) { return query::severity_colour(row["verdict"]); };
  std::vector<query::Column> columns = {
      {"rank", "rank", true},
      {"verdict", "verdict", false, false, false, nullptr, verdict},
      {"check", "check_name", false, true, false,
       [](const nlohmann::json& row) {
         const std::string check = query::cell_text(row["check_name"]);
         return check.rfind("mpnanny-", 0) == 0 ? check.substr(8) : check;
       }},
      {"site", "site", false, true, true},
      {"steps", "steps_observed", true},
      {"headroom", "worst_headroom", true},
      {"evidence", "evidence", false, true},
  };
  // One database: its rank is in the summary, and the columns are better spent on the rows.
  if (databases.size() == 1) columns.erase(columns.begin());
  switch (common.format) {
    case query::Format::Json: std::cout << query::json_text(rows, 2) << "\n"; break;
    case query::Format::Csv: {
      std::vector<query::Column> csv;
      for (const char* key : {"rank", "site_id", "check_name", "verdict", "file", "line", "function", "steps_observed",
                              "worst_headroom", "first_step", "value", "evidence"}) {
        csv.push_back({"", key});
      }
      std::cout << query::render_csv(rows, csv);
      break;
    }
    case query::Format::Table:
      if (!any) {
        std::cout << "no verification data in this run\n";
      } else if (rows.empty()) {
        std::cout << "no sites were verified in this run\n";
      } else {
        std::cout << query::render_table(rows, columns, common.colour);
      }
      break;
  }
  return 0;
}

}  // namespace mpnanny::cli
