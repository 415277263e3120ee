#include "queries.h"

#include "query_cells.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace mpnanny::query {

using cells::add_site;
using cells::integer;
using cells::str;

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string short_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

/// ",A,B,C,": the names in their order, for an ORDER BY that ranks a column by its place in the
/// list (instr), bound as a value: the vocabulary's order, not a copy of it in the SQL.
std::string ranked_names(const std::vector<std::string>& names) {
  std::string list = ",";
  for (const std::string& name : names) list += name + ",";
  return list;
}

const std::string kSiteVerdictsTable = "site_verdicts";

}  // namespace

std::string precision_name(const std::string& precision) { return vocab::upperCase(precision); }

std::string precision_label(vocab::HalfFormat format) { return vocab::upperCase(vocab::name(format)); }

vocab::HalfFormat judged_format(const std::string& precision) {
  return vocab::parseAnyCase<vocab::HalfFormat>(precision).value_or(vocab::HalfFormat::FP16);
}

double precision_max(const std::string& precision) {
  return judged_format(precision) == vocab::HalfFormat::BF16 ? 3.3895313892515355e+38 : 65504.0;
}

std::vector<std::string> severity_names() {
  std::vector<std::string> names = vocab::names<vocab::AlertSeverity>();
  std::reverse(names.begin(), names.end());
  return names;
}

std::string severity_choices() { return vocab::choices(severity_names()); }

std::string site_label(const nlohmann::json& row) {
  const std::string file = row.contains("file") ? str(row["file"]) : "";
  const int64_t line = row.contains("line") ? integer(row["line"]) : 0;
  if (!file.empty() || line > 0) {
    return (file.empty() ? std::string("?") : std::filesystem::path(file).filename().string()) + ":" +
           std::to_string(line);
  }
  if (row.contains("function") && !str(row["function"]).empty()) return str(row["function"]);
  if (row.contains("name") && !str(row["name"]).empty()) return str(row["name"]);
  if (row.contains("op") && !str(row["op"]).empty()) return str(row["op"]);
  return "?";
}

bool site_matches(const std::string& s, const std::string& file, int64_t line, const std::string& function,
                  const std::string& name, const std::string& op) {
  if (s.empty()) return true;
  const auto colon = s.rfind(':');
  if (colon != std::string::npos && colon + 1 < s.size() &&
      std::all_of(s.begin() + colon + 1, s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const std::string wanted_file = s.substr(0, colon);
    // A line number past int64 names no line: it matches nothing, it is not an error.
    int64_t wanted_line = -1;
    std::from_chars(s.data() + colon + 1, s.data() + s.size(), wanted_line);
    // ":46" is line 46 of any file.
    if (line == wanted_line && ends_with(file, wanted_file) &&
        (wanted_file.empty() || file.size() == wanted_file.size() ||
         file[file.size() - wanted_file.size() - 1] == '/' || wanted_file.front() == '/')) {
      return true;
    }
  }
  if (!name.empty() && name == s) return true;
  if (!op.empty() && (op == s || op == "aten::" + s)) return true;
  if (!function.empty() && function.find(s) != std::string::npos) return true;
  return !file.empty() && ends_with(file, s);
}

/// The sites with the least headroom (format max / largest |x|; 0 once NaN/Inf was seen), at most
/// `count` of them.
nlohmann::json worst_sites_of(const Database& db, int64_t run_id, const std::string& precision, int count) {
  // A bare column next to MAX() takes its value from the row holding the maximum (SQLite).
  auto q = db.prepare(
      "SELECT t.phase, t.op, t.name, l.function, l.file, l.line, MAX(COALESCE(t.max_abs, 0)) AS max_abs, "
      "t.step, SUM(t.nan_count + t.inf_count) AS nonfinite, COUNT(DISTINCT t.step) AS steps_observed, "
      "t.location_id "
      "FROM tensor_stats t LEFT JOIN locations l ON l.run_id = t.run_id AND l.location_id = t.location_id "
      "WHERE t.run_id = ? GROUP BY t.phase, t.op, t.name, t.location_id");
  q->bind(1, run_id);
  const double limit = precision_max(precision);
  std::vector<nlohmann::json> rows;
  while (q->step()) {
    nlohmann::json row = q->row();
    const double max_abs = q->real(6);
    const bool nonfinite = q->integer(8) > 0;
    row["headroom"] = nonfinite     ? nlohmann::json(0.0)
                      : max_abs > 0 ? nlohmann::json(limit / max_abs)
                                    : nlohmann::json();
    row["nonfinite"] = q->integer(8);
    // Where NaN/Inf decide the headroom, the step to look at is the first one that had them.
    // (A separate query: a second min/max aggregate above would unpin the bare `step`.)
    if (nonfinite) {
      auto first = db.prepare(
          "SELECT MIN(step) FROM tensor_stats WHERE run_id = ? AND phase = ? AND op IS ? AND name IS ? AND "
          "location_id = ? AND nan_count + inf_count > 0");
      first->bind(1, run_id).bind(2, q->text(0)).bind(5, q->integer(10));
      if (!q->is_null(1)) first->bind(3, q->text(1));
      if (!q->is_null(2)) first->bind(4, q->text(2));
      if (first->step()) row["step"] = first->value(0);
    }
    row.erase("location_id");
    add_site(row);
    if (!row["headroom"].is_null()) rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["headroom"].get<double>() < b["headroom"].get<double>();
  });
  if (static_cast<int>(rows.size()) > count) rows.resize(count);
  return rows;
}

/// The loss-scale history in one line, with its counts; null when the run recorded none.
nlohmann::json loss_scale_of(const Database& db, int64_t run_id) {
  auto q = db.prepare("SELECT step, scale, skipped FROM loss_scale WHERE run_id = ? ORDER BY step");
  q->bind(1, run_id);
  std::vector<std::pair<int64_t, double>> changes;
  int64_t skipped = 0, recorded = 0;
  double last = std::nan("");
  while (q->step()) {
    ++recorded;
    skipped += q->integer(2);
    const double scale = q->real(1);
    if (!(scale == last)) changes.emplace_back(q->integer(0), scale);
    last = scale;
  }
  if (recorded == 0) return nullptr;
  std::string line = short_number(changes.front().second);
  // One line: the start, then every change with its step; long histories keep both ends.
  const size_t keep = 6;
  for (size_t i = 1; i < changes.size(); ++i) {
    if (changes.size() > 2 * keep + 1 && i == keep + 1) {
      line += " -> ... (" + std::to_string(changes.size() - 2 * keep - 1) + " more)";
      i = changes.size() - keep - 1;
      continue;
    }
    line += " -> " + short_number(changes[i].second) + " @" + std::to_string(changes[i].first);
  }
  line += "; " + std::to_string(skipped) + " skipped step" + (skipped == 1 ? "" : "s");
  return {
      {"history", line}, {"changes", changes.size() - 1}, {"skipped", skipped}, {"final", last}, {"steps", recorded}};
}

nlohmann::json summary(const Databases& databases, int worst_sites) {
  nlohmann::json result = nlohmann::json::array();
  for (const auto& db : databases) {
    const nlohmann::json& run = db->run();
    const int64_t run_id = db->run_id();
    const std::string precision = precision_name(str(run["precision"]));
    nlohmann::json out = {{"rank", db->rank()},
                          {"file", db->path()},
                          {"run_id", run_id},
                          {"precision", precision},
                          {"torch_version", run["torch_version"]},
                          {"started_at", run["started_at"]},
                          {"ended_at", run["ended_at"]},
                          {"world_size", run["world_size"]},
                          {"dropped_records", run["dropped_records"]}};
    {
      // A directory used again appends runs to its file; the queries read one of them (the latest,
      // unless FILE#RUN names another), so the others are named rather than silently left out.
      auto q = db->prepare("SELECT run_id FROM runs WHERE run_id != ? ORDER BY run_id");
      q->bind(1, run_id);
      nlohmann::json others = nlohmann::json::array();
      while (q->step()) others.push_back(q->integer(0));
      out["other_runs"] = others;
    }
    {
      auto q = db->prepare(
          "SELECT COUNT(*), COALESCE(SUM(traced), 0), COALESCE(SUM(dense), 0), MIN(step), MAX(step) FROM steps "
          "WHERE run_id = ?");
      q->bind(1, run_id).step();
      out["steps"] = {{"seen", q->integer(0)},
                      {"traced", q->integer(1)},
                      {"dense", q->integer(2)},
                      {"first", q->value(3)},
                      {"last", q->value(4)}};
    }
    {
      // Most severe first: ?2 lists the severities in that order, unknown ones last.
      auto q = db->prepare(
          "SELECT type, severity, COUNT(*) FROM alerts WHERE run_id = ?1 GROUP BY type, severity "
          "ORDER BY COALESCE(NULLIF(instr(?2, ',' || severity || ','), 0), length(?2)), type");
      q->bind(1, run_id).bind(2, ranked_names(severity_names()));
      nlohmann::json counts = nlohmann::json::array();
      int64_t total = 0;
      while (q->step()) {
        counts.push_back({{"type", q->text(0)}, {"severity", q->text(1)}, {"count", q->integer(2)}});
        total += q->integer(2);
      }
      out["alert_counts"] = counts;
      out["alerts_total"] = total;
    }
    {
      auto q = db->prepare(
          "SELECT step, type, phase, op, name, function, file, line, value, threshold, message FROM alerts "
          "WHERE run_id = ? AND severity = ? ORDER BY step, seq, alert_id LIMIT 1");
      q->bind(1, run_id).bind(2, std::string(vocab::name(vocab::AlertSeverity::Error)));
      if (q->step()) {
        nlohmann::json first = q->row();
        add_site(first);
        out["first_error"] = first;
      } else {
        out["first_error"] = nullptr;
      }
    }
    out["worst_sites"] = worst_sites_of(*db, run_id, precision, worst_sites);
    out["loss_scale"] = loss_scale_of(*db, run_id);
    result.push_back(out);
  }
  return result;
}

std::optional<std::string> unknown_alert_type(const std::string& type) {
  if (vocab::parse<vocab::AlertType>(type)) return std::nullopt;
  return "no alert type '" + type + "' (types: " + vocab::joinedNames<vocab::AlertType>() + ")";
}

nlohmann::json alerts(const Databases& databases, const AlertFilter& filter) {
  nlohmann::json result = nlohmann::json::array();
  for (const auto& db : databases) {
    std::string sql =
        "SELECT step, seq, type, severity, rule, phase, op, name, function, file, line, value, threshold, message "
        "FROM alerts WHERE run_id = ?";
    if (filter.severity) sql += " AND severity = ?";
    if (filter.type) sql += " AND type = ?";
    if (filter.first_step) sql += " AND step >= ?";
    if (filter.last_step) sql += " AND step <= ?";
    sql += " ORDER BY step, seq, alert_id";
    auto q = db->prepare(sql);
    int i = 1;
    q->bind(i++, db->run_id());
    if (filter.severity) q->bind(i++, *filter.severity);
    if (filter.type) q->bind(i++, *filter.type);
    if (filter.first_step) q->bind(i++, *filter.first_step);
    if (filter.last_step) q->bind(i++, *filter.last_step);
    while (q->step()) {
      nlohmann::json row = q->row();
      if (filter.site && !site_matches(*filter.site, str(row["file"]), integer(row["line"]), str(row["function"]),
                                       str(row["name"]), str(row["op"]))) {
        continue;
      }
      row["rank"] = db->rank();
      add_site(row);
      result.push_back(row);
    }
  }
  return result;
}

nlohmann::json stats(const Databases& databases, const StatsFilter& filter) {
  nlohmann::json result = nlohmann::json::array();
  for (const auto& db : databases) {
    auto q = db->prepare(
        "SELECT t.step, t.seq, t.phase, t.op, t.name, l.function, l.file, l.line, t.dtype, t.shape, t.numel, "
        "t.nan_count, t.inf_count, t.zero_count, t.max_abs, t.min_abs_nonzero, t.mean, t.norm, t.fp16_overflow, "
        "t.fp16_subnormal, t.fp16_flush, t.bf16_overflow, t.bf16_subnormal, t.bf16_flush, t.update_ratio "
        "FROM tensor_stats t LEFT JOIN locations l ON l.run_id = t.run_id AND l.location_id = t.location_id "
        "WHERE t.run_id = ? AND t.step = ? ORDER BY t.seq");
    q->bind(1, db->run_id()).bind(2, filter.step);
    while (q->step()) {
      nlohmann::json row = q->row();
      const std::string name = str(row["name"]);
      if (filter.param && !(name == *filter.param || name.rfind(*filter.param + ".", 0) == 0)) continue;
      if (filter.site && !site_matches(*filter.site, str(row["file"]), integer(row["line"]), str(row["function"]), name,
                                       str(row["op"]))) {
        continue;
      }
      row["rank"] = db->rank();
      add_site(row);
      result.push_back(row);
    }
  }
  return result;
}

std::vector<int64_t> traced_steps(const Database& database) {
  std::vector<int64_t> steps;
  auto q = database.prepare("SELECT DISTINCT step FROM tensor_stats WHERE run_id = ? ORDER BY step");
  q->bind(1, database.run_id());
  while (q->step()) steps.push_back(q->integer(0));
  return steps;
}

nlohmann::json site_verdicts(const Database& db) {
  nlohmann::json rows = nlohmann::json::array();
  if (!db.has_table(kSiteVerdictsTable)) return rows;
  // Most urgent verdict first: ?2 lists the verdicts in the vocabulary's order, unknown ones last.
  auto q = db.prepare(
      "SELECT site_id, check_name, verdict, file, line, function, steps_observed, worst_headroom, first_step, "
      "value, evidence FROM site_verdicts WHERE run_id = ?1 "
      "ORDER BY COALESCE(NULLIF(instr(?2, ',' || verdict || ','), 0), length(?2)), file, line, site_id");
  q->bind(1, db.run_id()).bind(2, ranked_names(vocab::names<vocab::Verdict>()));
  while (q->step()) {
    nlohmann::json row = q->row();
    row["rank"] = db.rank();
    add_site(row);
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json sites(const Databases& databases) {
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json available = nlohmann::json::array();
  for (const auto& db : databases) {
    available.push_back(
        {{"rank", db->rank()}, {"file", db->path()}, {"verification", db->has_table(kSiteVerdictsTable)}});
    for (nlohmann::json& row : site_verdicts(*db)) rows.push_back(std::move(row));
  }
  return {{"available", available}, {"verdicts", rows}};
}

namespace {

struct CloseDatabase {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};

std::optional<double> optional_real(const Statement& row, int column) {
  return row.is_null(column) ? std::nullopt : std::optional<double>(row.real(column));
}

}  // namespace

RunVerdicts newest_site_verdicts(const std::string& path) {
  // Not a Database: any file with the table will do (no runs or meta needed), read-only, and no
  // file is created for a wrong path.
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    const std::string message = raw ? sqlite3_errmsg(raw) : "out of memory";
    sqlite3_close(raw);
    throw Error("cannot open '" + path + "': " + message);
  }
  const std::unique_ptr<sqlite3, CloseDatabase> db(raw);
  sqlite3_busy_timeout(db.get(), 2000);  // training may still be writing
  // SQLite's own words, with the file they are about ("file is not a database").
  const auto cannot_read = [&] { return Error("cannot read '" + path + "': " + sqlite3_errmsg(db.get())); };
  const auto prepared = [&](const std::string& sql) {
    try {
      return std::make_unique<Statement>(db.get(), sql);
    } catch (const Error&) {
      throw cannot_read();
    }
  };
  const auto next = [&](Statement& statement) {
    try {
      return statement.step();
    } catch (const Error&) {
      throw cannot_read();
    }
  };
  auto has_table = prepared("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  if (!next(has_table->bind(1, kSiteVerdictsTable))) {
    throw Error("'" + path + "' holds no verification data (no " + kSiteVerdictsTable +
                " table): train with MPNANNY_VERIFY=1 and the sites file of --export-sites");
  }
  auto rows = prepared(
      "SELECT run_id, site_id, verdict, evidence, steps_observed, worst_headroom, first_step, value, check_name, "
      "file, line, function FROM site_verdicts WHERE run_id = (SELECT MAX(run_id) FROM site_verdicts)");
  RunVerdicts out;
  while (next(*rows)) {
    out.run_id = rows->integer(0);
    SiteVerdictRow verdict;
    verdict.site_id = rows->text(1);
    verdict.verdict = rows->text(2);
    verdict.evidence = rows->text(3);
    verdict.steps_observed = rows->integer(4);
    verdict.worst_headroom = optional_real(*rows, 5);
    if (!rows->is_null(6)) verdict.first_step = rows->integer(6);
    verdict.value = optional_real(*rows, 7);
    verdict.check = rows->text(8);
    verdict.file = rows->text(9);
    verdict.line = rows->integer(10);
    verdict.function = rows->text(11);
    out.verdicts.push_back(std::move(verdict));
  }
  return out;
}

}  // namespace mpnanny::query
