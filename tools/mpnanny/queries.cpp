#include "queries.h"

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

namespace {

std::string str(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : std::string(); }
int64_t integer(const nlohmann::json& value) { return value.is_number() ? value.get<int64_t>() : 0; }

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string short_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

/// The site columns every row carries, from a row that has file/line/function.
void add_site(nlohmann::json& row) { row["site"] = site_label(row); }

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

namespace {

// A bad value's kind, worst last, so that std::max picks the one to report (nan worst, as the
// runtime's rank_agreement.bad_before ranks them).
enum class BadKind { None, Overflow, Inf, NaN };

BadKind bad_kind_from_name(const std::string& name) {
  if (name == "nan") return BadKind::NaN;
  if (name == "inf") return BadKind::Inf;
  if (name == "overflow") return BadKind::Overflow;
  return BadKind::None;
}

const char* stored_name(BadKind kind) {
  switch (kind) {
    case BadKind::NaN: return "nan";
    case BadKind::Inf: return "inf";
    case BadKind::Overflow: return "overflow";
    case BadKind::None: break;
  }
  return "";
}

const char* shown_name(BadKind kind) {
  switch (kind) {
    case BadKind::NaN: return "NaN";
    case BadKind::Inf: return "Inf";
    case BadKind::Overflow: return "overflow";
    case BadKind::None: break;
  }
  return "";
}

/// The kind of bad value a tensor_stats row holds, worst first, read from its columns nan_count,
/// inf_count, fp16_overflow and bf16_overflow at `first` (the overflow of the format the run was
/// judged against). Rows are filtered here rather than by SQL pasted per format: every query text
/// stays a literal.
BadKind bad_kind_of_row(const Statement& q, int first, bool judged_in_bf16) {
  if (q.integer(first) > 0) return BadKind::NaN;
  if (q.integer(first + 1) > 0) return BadKind::Inf;
  if (q.integer(first + (judged_in_bf16 ? 3 : 2)) > 0) return BadKind::Overflow;
  return BadKind::None;
}

bool judged_in_bf16(const Database& db) { return judged_format(str(db.run()["precision"])) == vocab::HalfFormat::BF16; }

/// `found` holds values of `wanted` (None: of any kind).
bool is_kind(BadKind found, BadKind wanted) {
  return found != BadKind::None && (wanted == BadKind::None || found == wanted);
}

const Database* database_of_rank(const Databases& databases, int64_t rank) {
  for (const auto& db : databases) {
    if (db->rank() == rank) return db.get();
  }
  return nullptr;
}

std::optional<int64_t> optional_integer(Statement& q, int column) {
  return q.is_null(column) ? std::nullopt : std::optional<int64_t>(q.integer(column));
}

/// The earliest step whose `phase` rows hold a bad value, in one rank's file.
std::optional<int64_t> first_bad_step(const Database& db, const std::string& phase) {
  auto q = db.prepare(
      "SELECT step, nan_count, inf_count, fp16_overflow, bf16_overflow FROM tensor_stats WHERE run_id = ? AND "
      "phase = ? AND (nan_count > 0 OR inf_count > 0 OR fp16_overflow > 0 OR bf16_overflow > 0) ORDER BY step");
  q->bind(1, db.run_id()).bind(2, phase);
  const bool bf16 = judged_in_bf16(db);
  while (q->step()) {
    if (bad_kind_of_row(*q, 1, bf16) != BadKind::None) return q->integer(0);
  }
  return std::nullopt;
}

/// The worst kind among a rank's `phase` rows at one step, and the first parameter (execution
/// order) whose row was bad.
std::pair<BadKind, std::string> worst_at(const Database& db, const std::string& phase, int64_t step) {
  auto q = db.prepare(
      "SELECT name, nan_count, inf_count, fp16_overflow, bf16_overflow FROM tensor_stats WHERE run_id = ? AND "
      "phase = ? AND step = ? ORDER BY seq");
  q->bind(1, db.run_id()).bind(2, phase).bind(3, step);
  const bool bf16 = judged_in_bf16(db);
  BadKind worst = BadKind::None;
  std::string first_bad;
  while (q->step()) {
    const BadKind kind = bad_kind_of_row(*q, 1, bf16);
    if (kind == BadKind::None) continue;
    if (first_bad.empty()) first_bad = q->text(0);
    worst = std::max(worst, kind);
  }
  return {worst, first_bad};
}

/// The first forward or backward op at `step` whose output held values of `kind`: where the bad
/// value was made on this rank (a gradient only collects it).
nlohmann::json first_bad_op(const Database& db, int64_t step, BadKind kind) {
  auto q = db.prepare(
      "SELECT t.seq, t.phase, t.op, l.function, l.file, l.line, t.nan_count, t.inf_count, t.fp16_overflow, "
      "t.bf16_overflow FROM tensor_stats t LEFT JOIN locations l ON l.run_id = t.run_id AND l.location_id = "
      "t.location_id WHERE t.run_id = ? AND t.step = ? AND t.phase IN ('forward', 'backward') AND (t.nan_count > 0 "
      "OR t.inf_count > 0 OR t.fp16_overflow > 0 OR t.bf16_overflow > 0) ORDER BY t.seq");
  q->bind(1, db.run_id()).bind(2, step);
  const bool bf16 = judged_in_bf16(db);
  while (q->step()) {
    if (!is_kind(bad_kind_of_row(*q, 6, bf16), kind)) continue;
    nlohmann::json op = q->row();
    for (const char* count : {"nan_count", "inf_count", "fp16_overflow", "bf16_overflow"}) op.erase(count);
    add_site(op);
    return op;
  }
  return nullptr;
}

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string text;
  for (const int64_t rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

std::string ranks_phrase(const std::vector<int64_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks);
}

/// One origin rank in words: "Inf in the gradient of fc1.weight before all-reduce (op aten::mm at
/// model.cpp:88)".
std::string origin_rank_text(const nlohmann::json& origin_rank) {
  const std::string parameter = str(origin_rank["parameter"]);
  std::string text = str(origin_rank["kind_shown"]) +
                     (parameter.empty() ? " in a gradient" : " in the gradient of " + parameter) + " before all-reduce";
  const nlohmann::json& op = origin_rank["op"];
  if (op.is_object()) {
    text += " (op " + (str(op["op"]).empty() ? std::string("?") : str(op["op"]));
    if (!op["file"].is_null() || !op["line"].is_null()) text += " at " + str(op["site"]);
    text += ")";
  }
  return text;
}

nlohmann::json bad_value_origin(const Databases& databases, int64_t world_size) {
  // Every rank writes the whole group's rows, so any file that has the table knows the step.
  std::optional<int64_t> step;
  const Database* agreement = nullptr;
  for (const auto& db : databases) {
    if (!db->has_table("rank_agreement")) continue;
    auto q = db->prepare("SELECT MIN(step) FROM rank_agreement WHERE run_id = ? AND bad_before IS NOT NULL");
    q->bind(1, db->run_id());
    if (q->step() && !q->is_null(0) && (!step || q->integer(0) < *step)) {
      step = q->integer(0);
      agreement = db.get();
    }
  }
  bool any_agreement_table = false;
  for (const auto& db : databases) any_agreement_table = any_agreement_table || db->has_table("rank_agreement");

  struct OriginRank {
    int64_t rank;
    BadKind kind;
    std::string parameter;
    std::string stored_kind;  ///< as rank_agreement wrote it: a newer runtime may know more kinds
  };
  std::vector<OriginRank> origins;
  std::set<int64_t> group;
  if (agreement) {
    auto q = agreement->prepare(
        "SELECT rank, bad_before, bad_parameter FROM rank_agreement WHERE run_id = ? AND step = ? ORDER BY rank");
    q->bind(1, agreement->run_id()).bind(2, *step);
    while (q->step()) {
      group.insert(q->integer(0));
      if (q->is_null(1)) continue;
      origins.push_back({q->integer(0), bad_kind_from_name(q->text(1)), q->is_null(2) ? "" : q->text(2), q->text(1)});
    }
  } else if (!any_agreement_table) {
    // Files from before the table: each rank's own gradients, which are the values before the
    // all-reduce. A file that has the table and no bad row says that nothing went bad.
    for (const auto& db : databases) {
      const auto bad = first_bad_step(*db, "gradient");
      if (bad && (!step || *bad < *step)) step = bad;
    }
    if (!step) return nullptr;
    for (const auto& db : databases) {
      const auto [kind, parameter] = worst_at(*db, "gradient", *step);
      if (kind != BadKind::None) origins.push_back({db->rank(), kind, parameter, stored_name(kind)});
    }
    for (int64_t rank = 0; rank < world_size; ++rank) group.insert(rank);
    for (const auto& db : databases) group.insert(db->rank());
  }
  if (!step || origins.empty()) return nullptr;

  nlohmann::json origin_ranks = nlohmann::json::array();
  std::vector<int64_t> origin_numbers;
  for (OriginRank& origin : origins) {
    const Database* db = database_of_rank(databases, origin.rank);
    if (db && origin.parameter.empty()) origin.parameter = worst_at(*db, "gradient", *step).second;
    nlohmann::json entry = {
        {"rank", origin.rank},
        {"kind", origin.stored_kind},
        {"kind_shown", origin.kind == BadKind::None ? origin.stored_kind : shown_name(origin.kind)},
        {"parameter", origin.parameter.empty() ? nlohmann::json() : nlohmann::json(origin.parameter)},
        {"op", db ? first_bad_op(*db, *step, origin.kind) : nlohmann::json()}};
    entry["text"] = origin_rank_text(entry);
    origin_ranks.push_back(entry);
    origin_numbers.push_back(origin.rank);
    group.erase(origin.rank);
  }
  const std::vector<int64_t> received(group.begin(), group.end());
  // Whether the bad value really reached them: their own gradient after the all-reduce, where the
  // runtime recorded it.
  std::vector<int64_t> bad_after, clean_after;
  for (const int64_t rank : received) {
    const Database* db = database_of_rank(databases, rank);
    if (!db) continue;
    auto q = db->prepare(
        "SELECT nan_count, inf_count, fp16_overflow, bf16_overflow FROM tensor_stats WHERE run_id = ? AND phase = "
        "'reduced_gradient' AND step = ?");
    q->bind(1, db->run_id()).bind(2, *step);
    const bool bf16 = judged_in_bf16(*db);
    bool any = false, bad = false;
    while (q->step()) {
      any = true;
      bad = bad || bad_kind_of_row(*q, 0, bf16) != BadKind::None;
    }
    if (!any) continue;
    (bad ? bad_after : clean_after).push_back(rank);
  }

  std::string text = ranks_phrase(origin_numbers) + ", step " + std::to_string(*step) + ": ";
  if (origin_ranks.size() == 1) {
    text += str(origin_ranks[0]["text"]);
  } else {
    for (size_t i = 0; i < origin_ranks.size(); ++i) {
      text += (i ? "; rank " : "rank ") + std::to_string(origin_numbers[i]) + ": " + str(origin_ranks[i]["text"]);
    }
  }
  if (!received.empty()) {
    text += "; " + ranks_phrase(received) + " received it";
    if (!bad_after.empty()) text += " (bad after the all-reduce on " + ranks_phrase(bad_after) + ")";
    if (bad_after.empty() && !clean_after.empty()) {
      text += " (but " + ranks_phrase(clean_after) + (clean_after.size() == 1 ? " was" : " were") +
              " clean after the all-reduce)";
    }
  }
  return {{"step", *step},
          {"source", agreement ? "rank_agreement" : "gradients"},
          {"ranks", origin_ranks},
          {"received", received},
          {"bad_after_reduce", bad_after},
          {"clean_after_reduce", clean_after},
          {"text", text}};
}

nlohmann::json stopped_ranks(const Databases& databases, int64_t world_size) {
  struct RankEnd {
    const Database* db;
    std::optional<int64_t> last_step;
    bool closed;
  };
  std::vector<RankEnd> ends;
  std::optional<int64_t> furthest;
  bool any_closed = false;
  for (const auto& db : databases) {
    auto q = db->prepare("SELECT MAX(step) FROM steps WHERE run_id = ?");
    q->bind(1, db->run_id());
    const auto last = q->step() ? optional_integer(*q, 0) : std::nullopt;
    const bool closed = !db->run()["ended_at"].is_null();
    ends.push_back({db.get(), last, closed});
    if (last && (!furthest || *last > *furthest)) furthest = last;
    any_closed = any_closed || closed;
  }
  nlohmann::json stopped = nlohmann::json::array();
  for (const RankEnd& end : ends) {
    const bool not_closed = !end.closed && any_closed;
    const bool behind = furthest && (!end.last_step || *end.last_step < *furthest);
    if (!not_closed && !behind) continue;
    std::string why;
    if (not_closed) why = "its run did not close";
    if (behind) why += std::string(why.empty() ? "" : "; ") + "the others reached step " + std::to_string(*furthest);
    const std::string rank = std::to_string(end.db->rank());
    stopped.push_back({{"rank", end.db->rank()},
                       {"file", end.db->path()},
                       {"last_step", end.last_step ? nlohmann::json(*end.last_step) : nlohmann::json()},
                       {"closed", end.closed},
                       {"others_last_step", furthest ? nlohmann::json(*furthest) : nlohmann::json()},
                       {"text", "rank " + rank +
                                    (end.last_step ? " stopped at step " + std::to_string(*end.last_step)
                                                   : " stopped before its first step") +
                                    " (" + why + ")"}});
  }
  // A rank of the group with no file at all: only a directory of several ranks can say so (one
  // file given alone is not missing the others).
  if (databases.size() > 1) {
    for (int64_t rank = 0; rank < world_size; ++rank) {
      if (database_of_rank(databases, rank)) continue;
      stopped.push_back({{"rank", rank},
                         {"file", nullptr},
                         {"last_step", nullptr},
                         {"closed", false},
                         {"others_last_step", furthest ? nlohmann::json(*furthest) : nlohmann::json()},
                         {"text", "rank " + std::to_string(rank) + " left no database here (world size " +
                                      std::to_string(world_size) + ")"}});
    }
  }
  std::stable_sort(stopped.begin(), stopped.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["rank"].get<int64_t>() < b["rank"].get<int64_t>();
  });
  return stopped;
}

}  // namespace

nlohmann::json rank_group(const Databases& databases) {
  int64_t world_size = 1;
  for (const auto& db : databases) {
    const nlohmann::json& size = db->run()["world_size"];
    if (size.is_number_integer()) world_size = std::max(world_size, size.get<int64_t>());
  }
  if (world_size <= 1) return nullptr;
  return {{"world_size", world_size},
          {"origin", bad_value_origin(databases, world_size)},
          {"stopped", stopped_ranks(databases, world_size)}};
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
      "SELECT run_id, site_id, verdict, evidence, steps_observed, worst_headroom, first_step, value "
      "FROM site_verdicts WHERE run_id = (SELECT MAX(run_id) FROM site_verdicts)");
  RunVerdicts out;
  while (next(*rows)) {
    out.run_id = rows->integer(0);
    StoredVerdict verdict;
    verdict.site_id = rows->text(1);
    verdict.verdict = rows->text(2);
    verdict.evidence = rows->text(3);
    verdict.steps_observed = rows->integer(4);
    verdict.worst_headroom = optional_real(*rows, 5);
    if (!rows->is_null(6)) verdict.first_step = rows->integer(6);
    verdict.value = optional_real(*rows, 7);
    out.verdicts.push_back(std::move(verdict));
  }
  return out;
}

}  // namespace mpnanny::query
