//===--- MetricsSchema.h - mpnanny -------------------------------*- C++ -*-===//
//
// What the runtime that writes metrics.db (runtime/src/MetricsWriter.cpp documents the layout) and
// the tools that read it share: the layout's version, so a reader refuses a file newer than
// itself, and the rows both sides handle whole. Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_COMMON_METRICSSCHEMA_H
#define MPNANNY_COMMON_METRICSSCHEMA_H

#include <cstdint>
#include <optional>
#include <string>

namespace mpnanny {

/// Version of the database layout; readers refuse files with a newer version.
constexpr int kMetricsSchemaVersion = 1;

/// One row of site_verdicts: a static site's verdict at the end of a MPNANNY_VERIFY=1 run, as the
/// runtime writes it and `mpnanny-check --verified` reads it back.
struct SiteVerdictRow {
  std::string site_id;
  std::string check;
  std::string file;
  int64_t line = 0;
  std::string function;
  std::string verdict; ///< a vocab::Verdict's name
  std::string evidence;
  int64_t steps_observed = 0;
  std::optional<double> worst_headroom;
  std::optional<int64_t> first_step;
  std::optional<double> value;
};

} // namespace mpnanny

#endif
