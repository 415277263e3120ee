// mpnanny summary: what happened in a run, in one screen.
#include <cstdio>
#include <iostream>

#include "cli.h"
#include "queries.h"

namespace mpnanny::cli {

namespace {

using nlohmann::json;
using query::cell_text;

std::string paint(bool colour, const std::string& code, const std::string& text) {
  return colour && !code.empty() ? code + text + query::kReset : text;
}

void print_table(const json& runs, bool colour) {
  bool first_run = true;
  for (const json& run : runs) {
    if (!first_run) std::cout << "\n";
    first_run = false;
    std::cout << paint(colour, query::kBold, "rank " + cell_text(run["rank"])) << "  run " << cell_text(run["run_id"])
              << "  judged against " << cell_text(run["precision"]) << "  torch " << cell_text(run["torch_version"])
              << "\n";
    std::cout << "  file    " << query::fit(cell_text(run["file"]), 90, true) << "\n";
    if (!run["other_runs"].empty()) {
      std::string others;
      for (const json& id : run["other_runs"]) others += (others.empty() ? "" : " ") + cell_text(id);
      std::cout << "  also    run " << others << " in this file (--db " << cell_text(run["file"]) << "#"
                << cell_text(run["other_runs"].front()) << " reads one)\n";
    }
    std::cout << "  started " << cell_text(run["started_at"]) << "  ended "
              << (run["ended_at"].is_null() ? std::string("(still running or killed)") : cell_text(run["ended_at"]))
              << "  world size " << cell_text(run["world_size"]);
    if (run["dropped_records"].is_number() && run["dropped_records"].get<int64_t>() > 0) {
      std::cout << "  " << paint(colour, "\033[33m", cell_text(run["dropped_records"]) + " records dropped");
    }
    std::cout << "\n";
    const json& steps = run["steps"];
    std::cout << "  steps   " << cell_text(steps["seen"]) << " seen";
    if (steps["seen"].get<int64_t>() > 0) {
      std::cout << " (" << cell_text(steps["first"]) << ".." << cell_text(steps["last"]) << "), "
                << cell_text(steps["traced"]) << " traced, " << cell_text(steps["dense"]) << " dense";
    }
    std::cout << "\n";
    std::cout << "  alerts  " << cell_text(run["alerts_total"]);
    // Counts wrap under each other rather than past the 100th column.
    size_t column = 10 + cell_text(run["alerts_total"]).size();
    std::string separator = ": ";
    for (const json& count : run["alert_counts"]) {
      const std::string plain = cell_text(count["severity"]) + " " + cell_text(count["type"]);
      const std::string item = plain + " " + cell_text(count["count"]);
      if (column + separator.size() + item.size() > 98) {
        std::cout << ",\n          ";
        column = 10;
        separator = "";
      }
      std::cout << separator << paint(colour, query::severity_colour(count["severity"]), plain) << " "
                << cell_text(count["count"]);
      column += separator.size() + item.size();
      separator = ", ";
    }
    std::cout << "\n";
    if (!run["first_error"].is_null()) {
      const json& e = run["first_error"];
      std::string what = cell_text(e["phase"]);
      if (!cell_text(e["op"]).empty()) what += " " + query::short_op(cell_text(e["op"]));
      if (!cell_text(e["name"]).empty()) what += " " + cell_text(e["name"]);
      std::cout << "  first ERROR  step " << cell_text(e["step"]) << "  "
                << paint(colour, query::colour_of(vocab::AlertSeverity::Error), cell_text(e["type"])) << " at "
                << cell_text(e["site"]);
      if (!cell_text(e["function"]).empty()) std::cout << " in " << query::fit(cell_text(e["function"]), 40, false);
      std::cout << "\n               " << query::fit(what, 50, false) << ": value " << cell_text(e["value"])
                << ", limit " << cell_text(e["threshold"]) << "\n";
    }
    std::cout << "  loss scale   "
              << (run["loss_scale"].is_null() ? std::string("not recorded") : cell_text(run["loss_scale"]["history"]))
              << "\n";
    if (!run["worst_sites"].empty()) {
      std::cout << "  worst sites by headroom (" << cell_text(run["precision"])
                << " max / max |x|; 0: NaN/Inf seen):\n";
      std::vector<query::Column> columns = {
          {"headroom", "headroom", true},
          {"max|x|", "max_abs", true},
          {"step", "step", true},
          {"phase", "phase"},
          {"site", "site", false, true, true},
          {"what", "what", false, true},
      };
      json rows = json::array();
      for (json row : run["worst_sites"]) {
        row["what"] = cell_text(row["op"]).empty() ? row["name"] : json(query::short_op(cell_text(row["op"])));
        rows.push_back(row);
      }
      std::string table = query::render_table(rows, columns, colour, 96);
      size_t start = 0;
      while (start < table.size()) {
        const size_t end = table.find('\n', start);
        std::cout << "    " << table.substr(start, end - start) << "\n";
        start = end + 1;
      }
    }
  }
}

void print_csv(const json& runs) {
  // Long form: one (rank, key, value) per fact, so a spreadsheet can pivot it.
  std::cout << "rank,key,value\r\n";
  const auto emit = [](const json& rank, const std::string& key, const json& value) {
    std::cout << cell_text(rank) << "," << query::csv_field(key) << ","
              << query::csv_field(value.is_string() ? value.get<std::string>()
                                  : value.is_null() ? ""
                                                    : query::json_text(value))
              << "\r\n";
  };
  for (const json& run : runs) {
    const json& rank = run["rank"];
    for (const char* key : {"file", "run_id", "precision", "torch_version", "started_at", "ended_at", "world_size",
                            "dropped_records", "alerts_total"}) {
      emit(rank, key, run[key]);
    }
    for (const auto& [key, value] : run["steps"].items()) emit(rank, "steps." + key, value);
    for (const json& count : run["alert_counts"]) {
      emit(rank, "alerts." + count["severity"].get<std::string>() + "." + count["type"].get<std::string>(),
           count["count"]);
    }
    if (!run["first_error"].is_null()) {
      for (const char* key : {"step", "type", "site", "function", "phase", "op", "name", "value", "threshold"}) {
        emit(rank, std::string("first_error.") + key, run["first_error"][key]);
      }
    }
    emit(rank, "loss_scale", run["loss_scale"].is_null() ? json() : run["loss_scale"]["history"]);
    int i = 0;
    for (const json& site : run["worst_sites"]) {
      const std::string prefix = "worst_sites." + std::to_string(i++) + ".";
      for (const char* key : {"site", "phase", "op", "name", "max_abs", "headroom", "step"}) {
        emit(rank, prefix + key, site[key]);
      }
    }
  }
}

}  // namespace

int summary(Args args) {
  const Common common = take_common(args);
  int worst = 5;
  if (const auto top = args.take("--top")) worst = parse_count("--top", *top);
  if (!args.finish().empty()) throw UsageError("summary takes no positional argument (use --db)");
  const auto databases = query::open_databases(common.db_specs);
  const json runs = query::summary(databases, worst);
  switch (common.format) {
    case query::Format::Json: std::cout << query::json_text(runs, 2) << "\n"; break;
    case query::Format::Csv: print_csv(runs); break;
    case query::Format::Table: print_table(runs, common.colour); break;
  }
  return 0;
}

}  // namespace mpnanny::cli
