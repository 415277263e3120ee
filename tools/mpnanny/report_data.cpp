#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "queries.h"
#include "query_cells.h"
#include "report.h"

namespace mpnanny::query {

namespace {

using nlohmann::json;

using cells::number;
using cells::str;

struct Series {
  json steps = json::array();
  json values = json::array();
  void add(int64_t step, double value) {
    steps.push_back(step);
    values.push_back(number(value));
  }
  json to_json() const { return {{"steps", steps}, {"values", values}}; }
};

std::string what_of(const json& row) {
  const std::string name = str(row["name"]);
  return str(row["phase"]) + " " + (name.empty() ? str(row["op"]) : name);
}

json curves(const Database& db) {
  json out = json::object();
  {
    std::map<std::string, Series> scalars;
    auto q = db.prepare("SELECT name, step, value FROM scalars WHERE run_id = ? ORDER BY name, step");
    q->bind(1, db.run_id());
    while (q->step()) scalars[q->text(0)].add(q->integer(1), q->is_null(2) ? NAN : q->real(2));
    json scalar_json = json::object();
    for (const auto& [name, series] : scalars) scalar_json[name] = series.to_json();
    out["scalars"] = scalar_json;
  }
  {
    // The global gradient norm is the norm of all parameters' gradients together.
    Series global;
    std::map<std::string, Series> layers;
    auto q = db.prepare(
        "SELECT step, name, norm, nan_count + inf_count FROM tensor_stats WHERE run_id = ? AND phase = 'gradient' "
        "ORDER BY step, seq");
    q->bind(1, db.run_id());
    int64_t current = INT64_MIN;
    double sum_squares = 0.0;
    bool bad = false;
    const auto close_step = [&] {
      if (current != INT64_MIN) global.add(current, bad ? NAN : std::sqrt(sum_squares));
    };
    while (q->step()) {
      const int64_t step = q->integer(0);
      if (step != current) {
        close_step();
        current = step;
        sum_squares = 0.0;
        bad = false;
      }
      const double norm = q->is_null(2) ? NAN : q->real(2);
      bad = bad || q->integer(3) > 0 || !std::isfinite(norm);
      if (std::isfinite(norm)) sum_squares += norm * norm;
      layers[q->text(1)].add(step, q->integer(3) > 0 ? NAN : norm);
    }
    close_step();
    out["grad_norm"] = global.to_json();
    json layer_json = json::object();
    for (const auto& [name, series] : layers) layer_json[name] = series.to_json();
    out["layer_grad_norms"] = layer_json;
  }
  {
    Series scale;
    json skipped = json::array();
    auto q = db.prepare("SELECT step, scale, skipped FROM loss_scale WHERE run_id = ? ORDER BY step");
    q->bind(1, db.run_id());
    while (q->step()) {
      scale.add(q->integer(0), q->real(1));
      if (q->integer(2)) skipped.push_back(q->integer(0));
    }
    out["loss_scale"] =
        scale.steps.empty() ? json() : json{{"steps", scale.steps}, {"values", scale.values}, {"skipped", skipped}};
  }
  return out;
}

json alert_list(const Database& db, size_t limit) {
  json out = json::array();
  auto q = db.prepare(
      "SELECT step, seq, type, severity, rule, phase, op, name, function, file, line, value, threshold, message "
      "FROM alerts WHERE run_id = ? ORDER BY step, seq, alert_id");
  q->bind(1, db.run_id());
  while (q->step() && out.size() < limit) {
    json row = q->row();
    row["site"] = site_label(row);
    row["what"] = what_of(row);
    out.push_back(row);
  }
  return out;
}

json heatmaps(const Database& db, const std::string& precision, int max_heatmaps, const json& alerts) {
  struct Map {
    json key;
    std::map<int64_t, std::vector<int64_t>> counts;  // step -> buckets
    std::map<int64_t, double> max_abs;
    int min_exponent = 0;
    double worst = 0.0;
    bool nonfinite = false;
    bool alerted = false;
    int64_t first_seq = INT64_MAX;
  };
  std::map<std::string, Map> maps;
  auto q = db.prepare(
      "SELECT t.step, t.seq, t.phase, t.op, t.name, l.function, l.file, l.line, t.max_abs, t.nan_count + "
      "t.inf_count, h.min_exponent, h.counts FROM tensor_stats t JOIN histograms h ON h.run_id = t.run_id AND "
      "h.step = t.step AND h.seq = t.seq LEFT JOIN locations l ON l.run_id = t.run_id AND l.location_id = "
      "t.location_id WHERE t.run_id = ? ORDER BY t.step, t.seq");
  q->bind(1, db.run_id());
  while (q->step()) {
    json row = {{"phase", q->value(2)},    {"op", q->value(3)},   {"name", q->value(4)},
                {"function", q->value(5)}, {"file", q->value(6)}, {"line", q->value(7)}};
    const std::string id = json_text(row);
    Map& map = maps[id];
    if (map.key.is_null()) {
      map.key = row;
      map.key["site"] = site_label(row);
      map.key["what"] = what_of(row);
      map.min_exponent = static_cast<int>(q->integer(10));
    }
    const int64_t step = q->integer(0);
    map.first_seq = std::min(map.first_seq, q->integer(1));
    json counts = json::parse(q->text(11), nullptr, /*allow_exceptions=*/false);
    if (!counts.is_array()) continue;
    auto& column = map.counts[step];
    column.resize(std::max(column.size(), counts.size()), 0);
    for (size_t b = 0; b < counts.size(); ++b) column[b] += counts[b].is_number() ? counts[b].get<int64_t>() : 0;
    const double max_abs = q->is_null(8) ? 0.0 : q->real(8);
    map.max_abs[step] = std::max(map.max_abs.count(step) ? map.max_abs[step] : 0.0, max_abs);
    map.worst = std::max(map.worst, max_abs);
    map.nonfinite = map.nonfinite || q->integer(9) > 0;
  }
  for (const json& alert : alerts) {
    for (auto& [id, map] : maps) {
      if (str(map.key["phase"]) == str(alert["phase"]) && str(map.key["op"]) == str(alert["op"]) &&
          str(map.key["name"]) == str(alert["name"]) && str(map.key["file"]) == str(alert["file"]) &&
          map.key["line"] == alert["line"]) {
        map.alerted = true;
      }
    }
  }
  std::vector<Map*> order;
  for (auto& [id, map] : maps) order.push_back(&map);
  // The sites closest to trouble first: alerted, then NaN/Inf, then least headroom; ties in
  // execution order so the page reads like the forward pass.
  std::stable_sort(order.begin(), order.end(), [](const Map* a, const Map* b) {
    if (a->alerted != b->alerted) return a->alerted;
    if (a->nonfinite != b->nonfinite) return a->nonfinite;
    if (a->worst != b->worst) return a->worst > b->worst;
    return a->first_seq < b->first_seq;
  });
  if (static_cast<int>(order.size()) > max_heatmaps) order.resize(max_heatmaps);
  std::stable_sort(order.begin(), order.end(), [](const Map* a, const Map* b) {
    if (a->alerted != b->alerted) return a->alerted;
    return a->first_seq < b->first_seq;
  });
  json out = json::array();
  const double limit = precision_max(precision);
  for (const Map* map : order) {
    json steps = json::array(), counts = json::array(), max_abs = json::array();
    for (const auto& [step, column] : map->counts) {
      steps.push_back(step);
      counts.push_back(column);
      max_abs.push_back(number(map->max_abs.at(step)));
    }
    json entry = map->key;
    entry["min_exponent"] = map->min_exponent;
    entry["steps"] = steps;
    entry["counts"] = counts;
    entry["max_abs"] = max_abs;
    entry["alerted"] = map->alerted;
    entry["headroom"] = map->nonfinite ? json(0.0) : map->worst > 0 ? json(limit / map->worst) : json();
    out.push_back(entry);
  }
  return out;
}

json localization(const Database& db, const std::string& precision, json& chains) {
  json out = json::array();
  auto q = db.prepare(
      "SELECT type, severity, step, seq, phase, op, name, function, file, line, value, threshold, message FROM "
      "alerts a WHERE run_id = ? AND alert_id = (SELECT alert_id FROM alerts b WHERE b.run_id = a.run_id AND "
      "b.type = a.type ORDER BY step, seq, alert_id LIMIT 1) ORDER BY step, seq");
  q->bind(1, db.run_id());
  std::set<int64_t> steps;
  while (q->step()) {
    json row = q->row();
    row["site"] = site_label(row);
    row["what"] = what_of(row);
    steps.insert(row["step"].get<int64_t>());
    out.push_back(row);
  }
  const bool fp16 = judged_format(precision) != vocab::HalfFormat::BF16;
  for (const int64_t step : steps) {
    json chain = json::array();
    auto c = db.prepare(
        "SELECT t.seq, t.phase, t.op, t.name, l.function, l.file, l.line, t.max_abs, t.nan_count, t.inf_count, "
        "t.fp16_overflow, t.bf16_overflow FROM tensor_stats t LEFT JOIN locations l ON l.run_id = t.run_id AND "
        "l.location_id = t.location_id WHERE t.run_id = ? AND t.step = ? ORDER BY t.seq");
    c->bind(1, db.run_id()).bind(2, step);
    bool first_bad_seen = false;
    while (c->step()) {
      json row = c->row();
      const bool bad = c->integer(8) > 0 || c->integer(9) > 0 || (fp16 ? c->integer(10) : c->integer(11)) > 0;
      row["site"] = site_label(row);
      row["what"] = what_of(row);
      row["bad"] = bad;
      row["first_bad"] = bad && !first_bad_seen;
      first_bad_seen = first_bad_seen || bad;
      chain.push_back(row);
    }
    chains[std::to_string(step)] = chain;
  }
  return out;
}

/// One lane of the rank view: the steps a rank saw, whether its run closed, and its alerts as marks,
/// one per step (the worst severity there, the count and the types), so that a long run's lane
/// stays a few thousand marks.
json rank_lane(const Database& db, size_t max_marks) {
  json lane = {{"rank", db.rank()}, {"file", db.path()}, {"closed", !db.run()["ended_at"].is_null()}};
  {
    auto q = db.prepare("SELECT MIN(step), MAX(step) FROM steps WHERE run_id = ?");
    q->bind(1, db.run_id()).step();
    lane["first_step"] = q->value(0);
    lane["last_step"] = q->value(1);
  }
  // Most severe first within a step: the first row of a step names its worst severity.
  auto q = db.prepare(
      "SELECT step, severity, type, COUNT(*) FROM alerts WHERE run_id = ?1 GROUP BY step, severity, type "
      "ORDER BY step, COALESCE(NULLIF(instr(?2, ',' || severity || ','), 0), length(?2)), type");
  std::string ranked = ",";
  for (const std::string& name : severity_names()) ranked += name + ",";
  q->bind(1, db.run_id()).bind(2, ranked);
  json marks = json::array();
  while (q->step()) {
    const int64_t step = q->integer(0);
    if (marks.empty() || marks.back()["step"].get<int64_t>() != step) {
      if (marks.size() >= max_marks) break;
      marks.push_back({{"step", step}, {"severity", q->text(1)}, {"count", 0}, {"types", json::array()}});
    }
    json& mark = marks.back();
    mark["count"] = mark["count"].get<int64_t>() + q->integer(3);
    if (std::find(mark["types"].begin(), mark["types"].end(), json(q->text(2))) == mark["types"].end()) {
      mark["types"].push_back(q->text(2));
    }
  }
  lane["marks"] = marks;
  return lane;
}

/// The rank view of a data-parallel run: one lane per rank on the step axis, with the group's
/// origin and stopped ranks; null for a single database or a run without a process group.
json rank_view(const Databases& databases) {
  if (databases.size() < 2) return nullptr;
  json group = rank_group(databases);
  if (group.is_null()) return nullptr;
  json lanes = json::array();
  for (const auto& db : databases) lanes.push_back(rank_lane(*db, 5000));
  group["lanes"] = lanes;
  return group;
}

}  // namespace

nlohmann::json report_data(const Databases& databases, int max_heatmaps) {
  json runs = json::array();
  for (const auto& db : databases) {
    const json& run = db->run();
    const std::string precision = precision_name(str(run["precision"]));
    json out = {{"rank", db->rank()},
                {"file", db->path()},
                {"run_id", db->run_id()},
                {"precision", precision},
                {"torch_version", run["torch_version"]},
                {"started_at", run["started_at"]},
                {"ended_at", run["ended_at"]},
                {"limit", precision_max(precision)}};
    {
      auto q =
          db->prepare("SELECT COUNT(*), COALESCE(SUM(traced), 0), MIN(step), MAX(step) FROM steps WHERE run_id = ?");
      q->bind(1, db->run_id()).step();
      out["steps"] = {
          {"seen", q->integer(0)}, {"traced", q->integer(1)}, {"first", q->value(2)}, {"last", q->value(3)}};
    }
    out["curves"] = curves(*db);
    out["alerts"] = alert_list(*db, 2000);
    {
      auto q = db->prepare("SELECT COUNT(*) FROM alerts WHERE run_id = ?");
      q->bind(1, db->run_id()).step();
      out["alerts_total"] = q->integer(0);
    }
    out["heatmaps"] = heatmaps(*db, precision, max_heatmaps, out["alerts"]);
    json chains = json::object();
    out["localization"] = localization(*db, precision, chains);
    out["chains"] = chains;
    // This run's own: two runs of one file, or two files, may have the same rank.
    out["verdicts"] = db->has_table("site_verdicts") ? site_verdicts(*db) : json();
    runs.push_back(out);
  }
  json data = {{"runs", runs}};
  if (json ranks = rank_view(databases); !ranks.is_null()) data["ranks"] = ranks;
  return data;
}

}  // namespace mpnanny::query
