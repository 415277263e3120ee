//===--- MetricsSchema.h - mpnanny -------------------------------*- C++ -*-===//
//
// The version of the metrics.db layout, shared by the runtime that writes it
// (runtime/src/MetricsWriter.cpp documents the layout) and the tools that read it: one number,
// so a reader refuses a file newer than itself. Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_COMMON_METRICSSCHEMA_H
#define MPNANNY_COMMON_METRICSSCHEMA_H

namespace mpnanny {

/// Version of the database layout; readers refuse files with a newer version.
constexpr int kMetricsSchemaVersion = 1;

} // namespace mpnanny

#endif
