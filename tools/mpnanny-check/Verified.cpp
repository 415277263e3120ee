//===--- Verified.cpp - mpnanny-check --verified --------------------------===//
#include "Verified.h"

#include "Vocabulary.h"
#include "queries.h" // mpnanny_query reads the site_verdicts table

namespace mpnanny::check {

const SiteVerdict *Verdicts::of(const Finding &F) const {
  auto It = BySite.find(F.SiteId);
  return It == BySite.end() ? nullptr : &It->second;
}

bool Verdicts::cleared(const Finding &F, int64_t MinSteps) const {
  const SiteVerdict *V = of(F);
  return V && V->Verdict == vocab::name(vocab::Verdict::NotObserved) &&
         V->StepsObserved >= MinSteps;
}

std::optional<Verdicts> readVerdicts(const std::string &Path, std::string &Error) {
  query::RunVerdicts Stored;
  try {
    Stored = query::newest_site_verdicts(Path);
  } catch (const std::exception &E) {
    Error = E.what();
    return std::nullopt;
  }
  Verdicts Out;
  Out.Database = Path;
  Out.RunId = Stored.run_id;
  for (query::StoredVerdict &Row : Stored.verdicts) {
    SiteVerdict V;
    V.Verdict = std::move(Row.verdict);
    V.Evidence = std::move(Row.evidence);
    V.StepsObserved = Row.steps_observed;
    V.WorstHeadroom = Row.worst_headroom;
    V.FirstStep = Row.first_step;
    V.Value = Row.value;
    Out.BySite.emplace(std::move(Row.site_id), std::move(V));
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
