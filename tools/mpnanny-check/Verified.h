//===--- Verified.h - mpnanny-check --verified ------------------*- C++ -*-===//
//
// Run-time evidence for static findings: the verdicts a MPNANNY_VERIFY=1 run stored in
// metrics.db (table site_verdicts, runtime/src/MetricsWriter.cpp), matched to the findings
// by site id, so each finding shows whether training confirmed or cleared it.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_VERIFIED_H
#define MPNANNY_TOOLS_VERIFIED_H

#include "Output.h"
#include "queries.h" // mpnanny_query reads the site_verdicts table

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mpnanny::check {

/// One row of site_verdicts, as mpnanny_query reads it (the one reader of that table).
using SiteVerdict = SiteVerdictRow;

struct Verdicts {
  std::string Database;
  int64_t RunId = 0;
  std::map<std::string, SiteVerdict> BySite;

  const SiteVerdict *of(const Finding &F) const;
  /// NOT_OBSERVED across at least `MinSteps` steps: the run showed the site healthy.
  bool cleared(const Finding &F, int64_t MinSteps) const;
};

/// The verdicts of the newest verified run in `Path`. On error (no such file, not an SQLite
/// database, no site_verdicts table) returns nothing and sets `Error`.
std::optional<Verdicts> readVerdicts(const std::string &Path, std::string &Error);

/// The finding's verdict as JSON ({"verdict", "evidence", "steps_observed", "worst_headroom",
/// "first_step", "value"}), or null when the run holds none for its site.
nlohmann::json verdictJson(const Verdicts &V, const Finding &F);

/// Adds `verdict` and `verdictEvidence` to the properties of each SARIF result, by site id.
void addVerdictsToSarif(nlohmann::json &Sarif, const Verdicts &V);

/// The text form: clang's diagnostic line, then a note with the verdict.
std::string verdictText(const Verdicts &V, const Finding &F);

} // namespace mpnanny::check

#endif
