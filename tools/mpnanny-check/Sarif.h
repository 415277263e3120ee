//===--- Sarif.h - mpnanny-check ---------------------------------*- C++ -*-===//
//
// Findings as a SARIF 2.1.0 log (OASIS), for code-scanning dashboards: one run,
// the checks as rules with their knowledge pages as help, the notes as related
// locations, fix-its as fixes and the site id as a partial fingerprint.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_TOOLS_SARIF_H
#define MPNANNY_TOOLS_SARIF_H

#include "Output.h"
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mpnanny::check {

struct SarifRun {
  std::string ToolVersion;
  std::vector<std::string> Checks;   ///< every enabled check, reported or not
  std::string WorkingDirectory;      ///< locations under it are written relative to it
  std::vector<std::string> Problems; ///< files that could not be scanned, and why
};

nlohmann::json toSarif(const std::vector<Finding> &Findings, const SarifRun &Run);

} // namespace mpnanny::check

#endif
