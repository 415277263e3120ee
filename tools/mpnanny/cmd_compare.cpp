// mpnanny compare REFERENCE.db LOW.db: where a low-precision run departs from its fp32
// reference, as a table and optionally as an HTML page.
#include <cstdlib>
#include <iostream>

#include "cli.h"
#include "queries.h"
#include "report.h"

namespace mpnanny::cli {

namespace {

std::optional<double> parse_real(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end != '\0' || !(value >= 0)) return std::nullopt;
  return value;
}

}  // namespace

int compare(Args args) {
  // --db is not how compare takes its files, but --format/--color work as everywhere.
  std::vector<std::string> specs = args.take_all("--db", true);
  auto output = args.take("-o");
  if (auto long_output = args.take("--output")) output = long_output;
  query::CompareOptions options;
  if (const auto value = args.take("--tolerance")) {
    options.tolerance = parse_real(*value);
    if (!options.tolerance) throw UsageError("--tolerance must be a non-negative number");
  }
  if (const auto value = args.take("--floor")) {
    const auto parsed = parse_real(*value);
    if (!parsed || *parsed <= 0) throw UsageError("--floor must be a positive number");
    options.floor = *parsed;
  }
  const std::string title = args.take("--title").value_or("mpnanny: FP32 vs low precision");
  Common common = take_common(args);
  for (const std::string& positional : args.finish()) specs.push_back(positional);
  if (specs.size() != 2) throw UsageError("compare needs two databases: REFERENCE.db (fp32) LOW.db (fp16/bf16)");

  const query::Database reference(specs[0]);
  const query::Database low(specs[1]);
  const nlohmann::json result = query::compare_runs(reference, low, options);

  const nlohmann::json& rows = result["rows"];
  const auto relative = [](const nlohmann::json& row) { return query::cell_text(row["max_relative"]); };
  std::vector<query::Column> columns = {
      {"departs", "departure_step", true},
      {"max rel", "max_relative", true, false, false, relative,
       [](const nlohmann::json& row) {
         return row["departs"].get<bool>() ? query::colour_of(vocab::AlertSeverity::Warning) : std::string();
       }},
      {"what", "what", false, true, false,
       [](const nlohmann::json& row) {
         const std::string name = query::cell_text(row["name"]);
         return query::cell_text(row["phase"]) + " " +
                (name.empty() ? query::short_op(query::cell_text(row["op"])) : name);
       }},
      {"site", "site", false, true, true},
      {"function", "function", false, true},
      {"steps", "steps", true, false, false,
       [](const nlohmann::json& row) { return std::to_string(row["steps"].size()); }},
  };
  switch (common.format) {
    case query::Format::Json: {
      std::cout << query::json_text(result, 2) << "\n";
      break;
    }
    case query::Format::Csv: {
      nlohmann::json flat = nlohmann::json::array();
      for (nlohmann::json row : rows) {
        row["steps_compared"] = row["steps"].size();
        flat.push_back(row);
      }
      std::vector<query::Column> csv;
      for (const char* key : {"departure_step", "max_relative", "phase", "op", "name", "file", "line", "function",
                              "occurrence", "steps_compared"}) {
        csv.push_back({"", key});
      }
      std::cout << query::render_csv(flat, csv);
      break;
    }
    case query::Format::Table: {
      const nlohmann::json& d = result["departure"];
      const std::string low_suffix =
          " (run " + std::to_string(low.run_id()) + ", " + result["low_format"].get<std::string>() + ")";
      const std::string reference_suffix = " (run " + std::to_string(reference.run_id()) + ")";
      std::cout << "reference " << query::fit(reference.path(), 90 - reference_suffix.size(), true) << reference_suffix
                << "\n"
                << "low       " << query::fit(low.path(), 90 - low_suffix.size(), true) << low_suffix << "\n"
                << "tolerance " << query::cell_text(result["tolerance"]) << " relative (floor "
                << query::cell_text(result["floor"]) << "); " << query::cell_text(result["matched"])
                << " tensors matched";
      if (result["only_in_reference"].get<int64_t>() || result["only_in_low"].get<int64_t>()) {
        std::cout << ", " << query::cell_text(result["only_in_reference"]) << " only in the reference, "
                  << query::cell_text(result["only_in_low"]) << " only in the low run";
      }
      std::cout << "\n";
      if (d.is_null()) {
        std::cout << "no departure: every matched tensor stays within the tolerance\n";
      } else {
        std::string where = query::cell_text(d["site"]);
        if (!query::cell_text(d["function"]).empty()) where += " in " + query::cell_text(d["function"]);
        std::cout << (common.colour ? query::kBold : "") << "departs at step " << query::cell_text(d["step"]) << " at "
                  << query::fit(where, 70, false) << (common.colour ? query::kReset : "") << "\n  "
                  << query::fit(query::cell_text(d["what"]), 40, false) << ": " << query::cell_text(d["stat"]) << " "
                  << query::cell_text(d["reference"]) << " (fp32) vs " << query::cell_text(d["low"]) << ", relative "
                  << query::cell_text(d["relative"]) << "\n";
      }
      std::cout << "\n" << query::render_table(rows, columns, common.colour);
      break;
    }
  }
  if (output) {
    write_file_whole(*output, query::render_html({{"compare", result}}, title));
    // On stderr so that --format json on stdout stays parseable.
    std::cerr << "compare report: " << *output << "\n";
  }
  return 0;
}

}  // namespace mpnanny::cli
