// mpnanny alerts: one row per alert, filtered by severity, type, site and step range.
#include <iostream>

#include "cli.h"
#include "queries.h"

namespace mpnanny::cli {

namespace {

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

/// "A:B", "A:", ":B" or "A".
void parse_steps(const std::string& text, query::AlertFilter& filter) {
  const auto colon = text.find(':');
  const std::string first = colon == std::string::npos ? text : text.substr(0, colon);
  const std::string last = colon == std::string::npos ? text : text.substr(colon + 1);
  if (!first.empty()) {
    filter.first_step = parse_integer(first);
    if (!filter.first_step) throw UsageError("--steps must be A:B, A:, :B or A (integers), not '" + text + "'");
  }
  if (!last.empty()) {
    filter.last_step = parse_integer(last);
    if (!filter.last_step) throw UsageError("--steps must be A:B, A:, :B or A (integers), not '" + text + "'");
  }
}

}  // namespace

int alerts(Args args) {
  const Common common = take_common(args);
  query::AlertFilter filter;
  if (auto severity = args.take("--severity")) {
    *severity = upper(*severity);
    if (!vocab::parse<vocab::AlertSeverity>(*severity)) {
      throw UsageError("--severity must be " + query::severity_choices());
    }
    filter.severity = severity;
  }
  if (auto type = args.take("--type")) {
    filter.type = upper(*type);
    if (const auto unknown = query::unknown_alert_type(*filter.type)) throw UsageError("--type: " + *unknown);
  }
  filter.site = args.take("--site");
  if (const auto steps = args.take("--steps")) parse_steps(*steps, filter);
  const auto rank = take_rank(args);
  if (!args.finish().empty()) throw UsageError("alerts takes no positional argument (use --db)");

  const auto databases = select_rank_option(query::open_databases(common.db_specs), rank);
  const nlohmann::json rows = query::alerts(databases, filter);
  const auto severity = [](const nlohmann::json& row) { return query::severity_colour(row["severity"]); };
  std::vector<query::Column> columns = {
      {"rank", "rank", true},
      {"step", "step", true},
      {"sev", "severity", false, false, false,
       [](const nlohmann::json& row) {
         const std::string text = query::cell_text(row["severity"]);
         return text == vocab::name(vocab::AlertSeverity::Warning) ? std::string("WARN") : text;
       },
       severity},
      {"type", "type", false, false, false, nullptr, severity},
      {"site", "site", false, true, true},
      {"function", "function", false, true},
      {"what", "what", false, true, false,
       [](const nlohmann::json& row) {
         const std::string op = query::cell_text(row["op"]), name = query::cell_text(row["name"]);
         return query::cell_text(row["phase"]) + " " + (name.empty() ? query::short_op(op) : name);
       }},
      {"value", "value", true},
      {"threshold", "threshold", true},
  };
  // One database: its rank is in the summary, and the columns are better spent on the rows.
  if (databases.size() == 1) columns.erase(columns.begin());
  switch (common.format) {
    case query::Format::Json: std::cout << query::json_text(rows, 2) << "\n"; break;
    case query::Format::Csv: {
      std::vector<query::Column> csv = {{"", "rank"},  {"", "step"},      {"", "seq"},    {"", "severity"},
                                        {"", "type"},  {"", "rule"},      {"", "phase"},  {"", "op"},
                                        {"", "name"},  {"", "file"},      {"", "line"},   {"", "function"},
                                        {"", "value"}, {"", "threshold"}, {"", "message"}};
      std::cout << query::render_csv(rows, csv);
      break;
    }
    case query::Format::Table:
      if (rows.empty()) {
        std::cout << "no alerts"
                  << (filter.severity || filter.type || filter.site || filter.first_step || filter.last_step
                          ? " match these filters"
                          : " in this run")
                  << "\n";
      } else {
        std::cout << query::render_table(rows, columns, common.colour);
      }
      break;
  }
  return 0;
}

}  // namespace mpnanny::cli
