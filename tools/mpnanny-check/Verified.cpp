//===--- Verified.cpp - mpnanny-check --verified --------------------------===//
#include "Verified.h"

#include <sqlite3.h>

#include <cstdio>
#include <memory>

namespace mpnanny::check {

namespace {

struct CloseDatabase {
  void operator()(sqlite3 *Db) const { sqlite3_close(Db); }
};
struct FinalizeStatement {
  void operator()(sqlite3_stmt *S) const { sqlite3_finalize(S); }
};

std::optional<double> realColumn(sqlite3_stmt *S, int I) {
  if (sqlite3_column_type(S, I) == SQLITE_NULL)
    return std::nullopt;
  return sqlite3_column_double(S, I);
}

std::string textColumn(sqlite3_stmt *S, int I) {
  const unsigned char *Text = sqlite3_column_text(S, I);
  return Text ? reinterpret_cast<const char *>(Text) : "";
}

} // namespace

const SiteVerdict *Verdicts::of(const Finding &F) const {
  auto It = BySite.find(F.SiteId);
  return It == BySite.end() ? nullptr : &It->second;
}

bool Verdicts::cleared(const Finding &F, int64_t MinSteps) const {
  const SiteVerdict *V = of(F);
  return V && V->Verdict == "NOT_OBSERVED" && V->StepsObserved >= MinSteps;
}

std::optional<Verdicts> readVerdicts(const std::string &Path, std::string &Error) {
  sqlite3 *Raw = nullptr;
  // Read-only, and no file is created for a wrong path.
  if (sqlite3_open_v2(Path.c_str(), &Raw, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    Error = "cannot open '" + Path + "': " + (Raw ? sqlite3_errmsg(Raw) : "out of memory");
    sqlite3_close(Raw);
    return std::nullopt;
  }
  std::unique_ptr<sqlite3, CloseDatabase> Db(Raw);
  sqlite3_busy_timeout(Db.get(), 2000); // training may still be writing
  auto Prepare = [&](const char *Sql) -> std::unique_ptr<sqlite3_stmt, FinalizeStatement> {
    sqlite3_stmt *S = nullptr;
    if (sqlite3_prepare_v2(Db.get(), Sql, -1, &S, nullptr) != SQLITE_OK) {
      Error = "cannot read '" + Path + "': " + sqlite3_errmsg(Db.get());
      sqlite3_finalize(S);
      return nullptr;
    }
    return std::unique_ptr<sqlite3_stmt, FinalizeStatement>(S);
  };
  auto HasTable = Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'site_verdicts'");
  if (!HasTable)
    return std::nullopt; // not an SQLite database
  if (sqlite3_step(HasTable.get()) != SQLITE_ROW) {
    Error = "'" + Path + "' holds no verification data (no site_verdicts table): train with "
            "MPNANNY_VERIFY=1 and the sites file of --export-sites";
    return std::nullopt;
  }
  Verdicts Out;
  Out.Database = Path;
  auto Rows = Prepare("SELECT run_id, site_id, verdict, evidence, steps_observed, worst_headroom, "
                      "first_step, value FROM site_verdicts WHERE run_id = (SELECT MAX(run_id) "
                      "FROM site_verdicts)");
  if (!Rows)
    return std::nullopt;
  while (sqlite3_step(Rows.get()) == SQLITE_ROW) {
    Out.RunId = sqlite3_column_int64(Rows.get(), 0);
    SiteVerdict V;
    V.Verdict = textColumn(Rows.get(), 2);
    V.Evidence = textColumn(Rows.get(), 3);
    V.StepsObserved = sqlite3_column_int64(Rows.get(), 4);
    V.WorstHeadroom = realColumn(Rows.get(), 5);
    if (sqlite3_column_type(Rows.get(), 6) != SQLITE_NULL)
      V.FirstStep = sqlite3_column_int64(Rows.get(), 6);
    V.Value = realColumn(Rows.get(), 7);
    Out.BySite.emplace(textColumn(Rows.get(), 1), std::move(V));
  }
  return Out;
}

nlohmann::json verdictJson(const Verdicts &V, const Finding &F) {
  const SiteVerdict *S = V.of(F);
  if (!S)
    return nullptr;
  auto Optional = [](const auto &O) { return O ? nlohmann::json(*O) : nlohmann::json(); };
  return {{"verdict", S->Verdict},
          {"evidence", S->Evidence},
          {"steps_observed", S->StepsObserved},
          {"worst_headroom", Optional(S->WorstHeadroom)},
          {"first_step", Optional(S->FirstStep)},
          {"value", Optional(S->Value)}};
}

void addVerdictsToSarif(nlohmann::json &Sarif, const Verdicts &V) {
  for (auto &Run : Sarif["runs"])
    for (auto &Result : Run["results"]) {
      auto &Properties = Result["properties"];
      auto It = V.BySite.find(Properties.value("siteId", ""));
      if (It == V.BySite.end())
        continue;
      Properties["verdict"] = It->second.Verdict;
      Properties["verdictEvidence"] = It->second.Evidence;
      Properties["verdictStepsObserved"] = It->second.StepsObserved;
    }
}

std::string verdictText(const Verdicts &V, const Finding &F) {
  const std::string Where =
      F.Where.File + ":" + std::to_string(F.Where.Line) + ":" + std::to_string(F.Where.Column);
  std::string Text = Where + ": " + F.Severity + ": " + F.Message + " [" + F.Check + "]\n";
  const SiteVerdict *S = V.of(F);
  Text += Where + ": note: run time: ";
  Text += S ? S->Verdict + ": " + S->Evidence
            : std::string("not verified (the run's sites file did not hold this site; "
                          "export the sites again)");
  return Text + "\n";
}

} // namespace mpnanny::check
