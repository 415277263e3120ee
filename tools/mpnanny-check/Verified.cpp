//===--- Verified.cpp - mpnanny-check --verified --------------------------===//
#include "Verified.h"

#include "Vocabulary.h"

namespace mpnanny::check {

const SiteVerdict *Verdicts::of(const Finding &F) const {
  auto It = BySite.find(F.SiteId);
  return It == BySite.end() ? nullptr : &It->second;
}

bool Verdicts::cleared(const Finding &F, int64_t MinSteps) const {
  const SiteVerdict *V = of(F);
  return V && V->verdict == vocab::name(vocab::Verdict::NotObserved) &&
         V->steps_observed >= MinSteps;
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
  for (SiteVerdict &Row : Stored.verdicts) {
    std::string Site = Row.site_id;
    Out.BySite.emplace(std::move(Site), std::move(Row));
  }
  return Out;
}

nlohmann::json verdictJson(const Verdicts &V, const Finding &F) {
  const SiteVerdict *S = V.of(F);
  if (!S)
    return nullptr;
  auto Optional = [](const auto &O) { return O ? nlohmann::json(*O) : nlohmann::json(); };
  return {{"verdict", S->verdict},
          {"evidence", S->evidence},
          {"steps_observed", S->steps_observed},
          {"worst_headroom", Optional(S->worst_headroom)},
          {"first_step", Optional(S->first_step)},
          {"value", Optional(S->value)}};
}

void addVerdictsToSarif(nlohmann::json &Sarif, const Verdicts &V) {
  for (auto &Run : Sarif["runs"])
    for (auto &Result : Run["results"]) {
      auto &Properties = Result["properties"];
      auto It = V.BySite.find(Properties.value("siteId", ""));
      if (It == V.BySite.end())
        continue;
      Properties["verdict"] = It->second.verdict;
      Properties["verdictEvidence"] = It->second.evidence;
      Properties["verdictStepsObserved"] = It->second.steps_observed;
    }
}

std::string verdictText(const Verdicts &V, const Finding &F) {
  const std::string Where =
      F.Where.File + ":" + std::to_string(F.Where.Line) + ":" + std::to_string(F.Where.Column);
  std::string Text = Where + ": " + F.Severity + ": " + F.Message + " [" + F.Check + "]\n";
  const SiteVerdict *S = V.of(F);
  Text += Where + ": note: run time: ";
  Text += S ? S->verdict + ": " + S->evidence
            : std::string("not verified (the run's sites file did not hold this site; "
                          "export the sites again)");
  return Text + "\n";
}

} // namespace mpnanny::check
