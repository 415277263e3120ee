#include <algorithm>
#include <cmath>
#include <map>

#include "queries.h"
#include "query_cells.h"
#include "report.h"

namespace mpnanny::query {

namespace {

using nlohmann::json;

using cells::number;
using cells::str;

struct Observation {
  int64_t seq = 0;
  double max_abs = NAN, norm = NAN, mean = NAN;
  int64_t numel = 0;
  bool nonfinite = false;
};

struct Track {
  json key;  // phase, op, name, function, file, line, site, what
  std::map<int64_t, Observation> by_step;
  int64_t first_seq = INT64_MAX;
};

/// Tracks keyed by what the tensor is, not where it sat in the step's sequence: the same site
/// and op (or parameter), and the how-many-th time it ran in that step (a layer called twice).
std::map<std::string, Track> load(const Database& db, std::map<std::string, int64_t>& dtypes) {
  std::map<std::string, Track> tracks;
  auto q = db.prepare(
      "SELECT t.step, t.seq, t.phase, t.op, t.name, l.function, l.file, l.line, t.max_abs, t.norm, t.mean, "
      "t.numel, t.nan_count + t.inf_count, t.dtype FROM tensor_stats t LEFT JOIN locations l ON l.run_id = "
      "t.run_id AND l.location_id = t.location_id WHERE t.run_id = ? ORDER BY t.step, t.seq");
  q->bind(1, db.run_id());
  int64_t current_step = INT64_MIN;
  std::map<std::string, int> occurrences;
  while (q->step()) {
    const int64_t step = q->integer(0);
    if (step != current_step) {
      occurrences.clear();
      current_step = step;
    }
    // The function is left out of the key: a converted copy of the model may be symbolized
    // through a different frame, while file, line and op stay the same.
    json base = {{"phase", q->value(2)},
                 {"op", q->value(3)},
                 {"name", q->value(4)},
                 {"file", q->value(6)},
                 {"line", q->value(7)}};
    const std::string base_id = json_text(base);
    const int occurrence = occurrences[base_id]++;
    const std::string id = base_id + "#" + std::to_string(occurrence);
    Track& track = tracks[id];
    if (track.key.is_null()) {
      track.key = base;
      track.key["function"] = q->value(5);
      track.key["occurrence"] = occurrence;
      track.key["site"] = site_label(track.key);
      const std::string name = str(base["name"]);
      track.key["what"] = str(base["phase"]) + " " + (name.empty() ? str(base["op"]) : name);
    }
    Observation o;
    o.seq = q->integer(1);
    o.max_abs = q->is_null(8) ? NAN : q->real(8);
    o.norm = q->is_null(9) ? NAN : q->real(9);
    o.mean = q->is_null(10) ? NAN : q->real(10);
    o.numel = q->integer(11);
    o.nonfinite = q->integer(12) > 0;
    track.first_seq = std::min(track.first_seq, o.seq);
    track.by_step[step] = o;
    ++dtypes[q->text(13)];
  }
  // Scalars (loss, learning rate) compare the same way, before every tensor of their step.
  auto s = db.prepare("SELECT name, step, value FROM scalars WHERE run_id = ? ORDER BY name, step");
  s->bind(1, db.run_id());
  while (s->step()) {
    const std::string id = "scalar:" + s->text(0);
    Track& track = tracks[id];
    if (track.key.is_null()) {
      track.key = {{"phase", "scalar"}, {"op", nullptr},   {"name", s->text(0)}, {"function", nullptr},
                   {"file", nullptr},   {"line", nullptr}, {"occurrence", 0}};
      track.key["site"] = s->text(0);
      track.key["what"] = "scalar " + s->text(0);
    }
    Observation o;
    o.seq = -1;
    o.max_abs = s->is_null(2) ? NAN : std::fabs(s->real(2));
    o.mean = s->is_null(2) ? NAN : s->real(2);
    o.norm = o.max_abs;
    o.numel = 1;
    o.nonfinite = s->is_null(2) || !std::isfinite(s->real(2));
    track.first_seq = -1;
    track.by_step[s->integer(1)] = o;
  }
  return tracks;
}

double relative(double ref, double low, double floor) {
  if (std::isnan(ref) && std::isnan(low)) return 0.0;
  if (!std::isfinite(ref) || !std::isfinite(low)) return ref == low ? 0.0 : INFINITY;
  return std::fabs(low - ref) / std::max(std::fabs(ref), floor);
}

/// The format the low run computed in, from the dtypes it recorded; else what it was judged against.
vocab::HalfFormat low_format(const std::map<std::string, int64_t>& dtypes, const std::string& judged) {
  int64_t half = 0, bf16 = 0;
  for (const auto& [dtype, count] : dtypes) {
    if (dtype == "Half") half += count;
    if (dtype == "BFloat16") bf16 += count;
  }
  if (bf16 > half) return vocab::HalfFormat::BF16;
  if (half > 0) return vocab::HalfFormat::FP16;
  return judged_format(judged);
}

json describe(const Database& db, const std::map<std::string, int64_t>& dtypes) {
  json dtype_json = json::object();
  for (const auto& [dtype, count] : dtypes) dtype_json[dtype] = count;
  return {{"file", db.path()},
          {"run_id", db.run_id()},
          {"rank", db.rank()},
          {"judged_against", db.run()["precision"]},
          {"dtypes", dtype_json}};
}

}  // namespace

nlohmann::json compare_runs(const Database& reference, const Database& low, const CompareOptions& options) {
  std::map<std::string, int64_t> ref_dtypes, low_dtypes;
  const auto ref_tracks = load(reference, ref_dtypes);
  const auto low_tracks = load(low, low_dtypes);
  const vocab::HalfFormat format = low_format(low_dtypes, str(low.run()["precision"]));
  const double epsilon = format == vocab::HalfFormat::BF16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10);
  const double tolerance = options.tolerance.value_or(8 * epsilon);

  json rows = json::array();
  int64_t only_reference = 0, only_low = 0;
  for (const auto& [id, ref] : ref_tracks) {
    const auto found = low_tracks.find(id);
    if (found == low_tracks.end()) {
      ++only_reference;
      continue;
    }
    const Track& other = found->second;
    json steps = json::array(), rel_max = json::array(), rel_norm = json::array(), rel_mean = json::array();
    json departure = nullptr;
    double worst = 0.0;
    int64_t departure_seq = 0;
    for (const auto& [step, a] : ref.by_step) {
      const auto b_found = other.by_step.find(step);
      if (b_found == other.by_step.end()) continue;
      const Observation& b = b_found->second;
      const double r_max = (b.nonfinite && !a.nonfinite) ? INFINITY : relative(a.max_abs, b.max_abs, options.floor);
      const double r_norm = (b.nonfinite && !a.nonfinite) ? INFINITY : relative(a.norm, b.norm, options.floor);
      // A mean is often near zero next to large elements: measure its change against the
      // tensor's root mean square, not against the mean itself.
      const double rms = a.numel > 0 && std::isfinite(a.norm) ? a.norm / std::sqrt(static_cast<double>(a.numel)) : 0.0;
      const double r_mean = std::isfinite(a.mean) && std::isfinite(b.mean)
                                ? std::fabs(b.mean - a.mean) / std::max({std::fabs(a.mean), rms, options.floor})
                                : relative(a.mean, b.mean, options.floor);
      steps.push_back(step);
      rel_max.push_back(number(r_max));
      rel_norm.push_back(number(r_norm));
      rel_mean.push_back(number(r_mean));
      const double judged = std::max(r_max, r_norm);
      if (!(judged <= worst)) worst = judged;
      if (departure.is_null() && !(judged <= tolerance)) {
        departure = {{"step", step},
                     {"stat", r_max >= r_norm ? "max_abs" : "norm"},
                     {"reference", json_number(r_max >= r_norm ? a.max_abs : a.norm)},
                     {"low", json_number(r_max >= r_norm ? b.max_abs : b.norm)},
                     {"relative", json_number(judged)},
                     {"nonfinite", b.nonfinite && !a.nonfinite}};
        departure_seq = a.seq;
      }
    }
    if (steps.empty()) continue;
    json row = ref.key;
    row["first_seq"] = ref.first_seq;
    row["steps"] = steps;
    row["rel_max_abs"] = rel_max;
    row["rel_norm"] = rel_norm;
    row["rel_mean"] = rel_mean;
    row["max_relative"] = json_number(worst);
    row["departs"] = !departure.is_null();
    row["departure"] = departure;
    row["departure_step"] = departure.is_null() ? json() : departure["step"];
    row["departure_seq"] = departure.is_null() ? json() : json(departure_seq);
    rows.push_back(row);
  }
  for (const auto& [id, track] : low_tracks) {
    if (!ref_tracks.count(id)) ++only_low;
  }
  // Departed tracks first, by step and then execution order: the first row is where the runs
  // part; then the rest by how far they drifted.
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    if (a["departs"] != b["departs"]) return a["departs"].get<bool>();
    if (a["departs"].get<bool>()) {
      if (a["departure_step"] != b["departure_step"])
        return a["departure_step"].get<int64_t>() < b["departure_step"].get<int64_t>();
      return a["departure_seq"].get<int64_t>() < b["departure_seq"].get<int64_t>();
    }
    const double x = a["max_relative"].is_number() ? a["max_relative"].get<double>() : INFINITY;
    const double y = b["max_relative"].is_number() ? b["max_relative"].get<double>() : INFINITY;
    if (x != y) return x > y;
    return a["first_seq"].get<int64_t>() < b["first_seq"].get<int64_t>();
  });
  for (size_t i = 0; i < rows.size(); ++i) rows[i]["rank_order"] = static_cast<int64_t>(i);
  json departure = nullptr;
  if (!rows.empty() && rows[0]["departs"].get<bool>()) {
    const json& first = rows[0];
    departure = first["departure"];
    for (const char* key : {"site", "what", "function", "file", "line", "phase", "op", "name"})
      departure[key] = first[key];
  }
  return {{"reference", describe(reference, ref_dtypes)},
          {"low", describe(low, low_dtypes)},
          {"low_format", precision_label(format)},
          {"tolerance", tolerance},
          {"floor", options.floor},
          {"departure", departure},
          {"matched", rows.size()},
          {"only_in_reference", only_reference},
          {"only_in_low", only_low},
          {"rows", rows}};
}

}  // namespace mpnanny::query
