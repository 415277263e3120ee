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

/// `text` after `lead`, wrapped at spaces to fit 100 columns; continuation lines are indented under
/// the text (tables fit a 100-column terminal).
void print_wrapped(const std::string& lead, const std::string& painted_lead, const std::string& text) {
  const size_t width = 100, indent = lead.size();
  std::cout << painted_lead;
  size_t column = indent, start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (column > indent && column + 1 + word.size() > width) {
      std::cout << "\n" << std::string(indent, ' ');
      column = indent;
    } else if (column > indent) {
      std::cout << ' ';
      ++column;
    }
    std::cout << word;
    column += word.size();
    start = end + 1;
  }
  std::cout << "\n";
}

/// The group's lines, before the ranks: where a bad value came from and which ranks stopped early
/// are what a data-parallel failure is about, and no single rank's block shows either.
void print_group(const json& group, bool colour) {
  if (group.is_null()) return;
  if (!group["origin"].is_null()) {
    print_wrapped("origin: ", paint(colour, query::colour_of(vocab::AlertSeverity::Error), "origin: "),
                  cell_text(group["origin"]["text"]));
  }
  for (const json& stopped : group["stopped"]) print_wrapped("", "", cell_text(stopped["text"]));
  if (!group["origin"].is_null() || !group["stopped"].empty()) std::cout << "\n";
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

void print_csv(const json& runs, const json& group) {
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
  if (group.is_null()) return;
  // The group's facts under the rank they are about: the origin ranks, the stopped ranks.
  if (!group["origin"].is_null()) {
    const json& origin = group["origin"];
    std::string received;
    for (const json& rank : origin["received"]) received += (received.empty() ? "" : " ") + cell_text(rank);
    for (const json& rank : origin["ranks"]) {
      emit(rank["rank"], "origin.step", origin["step"]);
      emit(rank["rank"], "origin.kind", rank["kind"]);
      emit(rank["rank"], "origin.parameter", rank["parameter"]);
      emit(rank["rank"], "origin.op", rank["op"].is_object() ? rank["op"]["op"] : json());
      emit(rank["rank"], "origin.site", rank["op"].is_object() ? rank["op"]["site"] : json());
      emit(rank["rank"], "origin.received", received);
      emit(rank["rank"], "origin.source", origin["source"]);
    }
  }
  for (const json& stopped : group["stopped"]) {
    emit(stopped["rank"], "stopped.last_step", stopped["last_step"]);
    emit(stopped["rank"], "stopped.closed", stopped["closed"]);
    emit(stopped["rank"], "stopped.others_last_step", stopped["others_last_step"]);
  }
}

}  // namespace

int summary(Args args) {
  const Common common = take_common(args);
  int worst = 5;
  if (const auto top = args.take("--top")) worst = parse_count("--top", *top);
  if (!args.finish().empty()) throw UsageError("summary takes no positional argument (use --db)");
  const auto databases = query::open_databases(common.db_specs);
  json runs = query::summary(databases, worst);
  const json group = query::rank_group(databases);
  switch (common.format) {
    case query::Format::Json:
      // The output stays one object per rank; in a process group each also carries the group's
      // origin and stopped ranks (the same in every one), so that any rank's object tells them.
      if (!group.is_null()) {
        for (json& run : runs) {
          run["origin"] = group["origin"];
          run["stopped"] = group["stopped"];
        }
      }
      std::cout << query::json_text(runs, 2) << "\n";
      break;
    case query::Format::Csv: print_csv(runs, group); break;
    case query::Format::Table:
      print_group(group, common.colour);
      print_table(runs, common.colour);
      break;
  }
  return 0;
}

}  // namespace mpnanny::cli
