// The data behind the HTML report and the precision comparison, and the page that shows them.
#ifndef MPNANNY_TOOLS_REPORT_H
#define MPNANNY_TOOLS_REPORT_H

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "database.h"

namespace mpnanny::query {

/// Everything the report page draws, one entry per database (rank): curves (scalars, global and
/// per-parameter gradient norms, loss scale), alert markers, log2|x| heatmaps per site or
/// parameter (the `max_heatmaps` with the least headroom), anomaly localization (first step and
/// site of each alert type, and every tensor at that step in execution order), verdicts. With
/// several ranks of a process group, `ranks` holds the rank view: rank_group()'s origin and
/// stopped ranks, and one lane per rank (its steps, whether it closed, its alerts per step).
nlohmann::json report_data(const Databases& databases, int max_heatmaps = 24);

struct CompareOptions {
  /// Relative difference beyond which the low-precision run has departed; empty: 8 machine
  /// epsilons of the low run's format (bf16 0.0625, fp16 0.0078).
  std::optional<double> tolerance;
  /// Denominator floor: |low - ref| / max(|ref|, floor), so values near zero do not explode.
  double floor = 1e-6;
};

/// Matches the tensors of two runs (same site, op or parameter, same occurrence within the step)
/// and reports, per match, the relative difference of max |x| and norm at each common step and
/// the first step where it exceeds the tolerance; `departure` is the earliest such step, at the
/// first site in execution order.
nlohmann::json compare_runs(const Database& reference, const Database& low, const CompareOptions& options);

/// The self-contained page: `data` is report_data()'s or {"compare": compare_runs()}.
std::string render_html(const nlohmann::json& data, const std::string& title);

/// JSON safe to put inside <script>: "<", ">", "&" and U+2028/9 become \u escapes.
std::string json_for_script(const nlohmann::json& data);
std::string html_escape(std::string_view text);

/// Embedded files (WebAssets.cpp, generated): uPlot.iife.min.js, uPlot.min.css, LICENSE,
/// report.js, report.css.
std::string_view web_asset(std::string_view name);

}  // namespace mpnanny::query

#endif  // MPNANNY_TOOLS_REPORT_H
