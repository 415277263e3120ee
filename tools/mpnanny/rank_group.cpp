// The ranks of a data-parallel run read together: where a bad value started before the gradient
// all-reduce (the origin), who received it, and which ranks stopped early (queries.h, rank_group).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "queries.h"
#include "query_cells.h"

namespace mpnanny::query {

using cells::add_site;
using cells::integer;
using cells::str;

namespace {

// A bad value's kind, worst last, so that std::max picks the one to report; none for a good value
// (and for a kind a newer runtime stored that this one does not know).
using BadValue = vocab::BadValue;
using BadKind = std::optional<BadValue>;

const char* shown_name(BadValue kind) {
  switch (kind) {
    case BadValue::Nan: return "NaN";
    case BadValue::Inf: return "Inf";
    case BadValue::Overflow: break;
  }
  return vocab::name(kind);
}

/// The kind of bad value a tensor_stats row holds, worst first, read from its columns nan_count,
/// inf_count, fp16_overflow and bf16_overflow at `first` (the overflow of the format the run was
/// judged against). Rows are filtered here rather than by SQL pasted per format: every query text
/// stays a literal.
BadKind bad_kind_of_row(const Statement& q, int first, bool judged_in_bf16) {
  if (q.integer(first) > 0) return BadValue::Nan;
  if (q.integer(first + 1) > 0) return BadValue::Inf;
  if (q.integer(first + (judged_in_bf16 ? 3 : 2)) > 0) return BadValue::Overflow;
  return std::nullopt;
}

bool judged_in_bf16(const Database& db) { return judged_format(str(db.run()["precision"])) == vocab::HalfFormat::BF16; }

/// `found` holds values of `wanted` (none: of any kind).
bool is_kind(BadKind found, BadKind wanted) { return found && (!wanted || found == wanted); }

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
    if (bad_kind_of_row(*q, 1, bf16)) return q->integer(0);
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
  BadKind worst;
  std::string first_bad;
  while (q->step()) {
    const BadKind kind = bad_kind_of_row(*q, 1, bf16);
    if (!kind) continue;
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
      origins.push_back(
          {q->integer(0), vocab::parse<BadValue>(q->text(1)), q->is_null(2) ? "" : q->text(2), q->text(1)});
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
      if (kind) origins.push_back({db->rank(), kind, parameter, vocab::name(*kind)});
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
        {"kind_shown", origin.kind ? shown_name(*origin.kind) : origin.stored_kind},
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
      bad = bad || bad_kind_of_row(*q, 0, bf16).has_value();
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

}  // namespace mpnanny::query
