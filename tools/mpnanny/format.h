// Table, CSV and JSON output of query rows. Tables fit a 100-column terminal (long cells are cut,
// paths from the left so the file name stays) and use colour only when asked or on a terminal.
#ifndef MPNANNY_TOOLS_FORMAT_H
#define MPNANNY_TOOLS_FORMAT_H

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "Vocabulary.h"

namespace mpnanny::query {

enum class Format { Table, Json, Csv };
std::optional<Format> parse_format(const std::string& text);

struct Column {
  std::string header;
  std::string key;  ///< the row's field; also the CSV header
  bool right = false;
  /// May be cut to fit the width; `left` cuts the start (paths).
  bool shrink = false;
  bool cut_left = false;
  /// Text for the table cell; default: the field as text, numbers with 4 significant digits.
  std::function<std::string(const nlohmann::json& row)> text;
  /// ANSI colour for the cell (table on a terminal only); empty for none.
  std::function<std::string(const nlohmann::json& row)> colour;
};

/// A field as table text: "" for null, %.4g for reals.
std::string cell_text(const nlohmann::json& value);
std::string render_table(const nlohmann::json& rows, const std::vector<Column>& columns, bool colour,
                         size_t width = 100);
/// RFC 4180: every column's raw field (not cut), quoted when needed.
std::string render_csv(const nlohmann::json& rows, const std::vector<Column>& columns);
std::string csv_field(const std::string& text);

/// Cuts `text` to `width` columns ("..tail" when from_left, else "head..").
std::string fit(const std::string& text, size_t width, bool from_left);

/// "aten::softmax" -> "softmax": tables are narrow, and every observed op is an ATen op.
std::string short_op(const std::string& op);

/// ANSI colours by meaning: how bad an alert is, or how sure a verdict is that a finding is real.
std::string colour_of(vocab::AlertSeverity severity);
std::string colour_of(vocab::Verdict verdict);
/// The colour of a stored severity or verdict name; none for any other text.
std::string severity_colour(const std::string& severity_or_verdict);
constexpr const char* kReset = "\033[0m";
constexpr const char* kBold = "\033[1m";

}  // namespace mpnanny::query

#endif  // MPNANNY_TOOLS_FORMAT_H
