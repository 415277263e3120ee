#include "format.h"

#include "database.h"  // json_text

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace mpnanny::query {

std::optional<Format> parse_format(const std::string& text) {
  if (text == "table") return Format::Table;
  if (text == "json") return Format::Json;
  if (text == "csv") return Format::Csv;
  return std::nullopt;
}

std::string cell_text(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float()) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value.get<double>());
    return buffer;
  }
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return json_text(value);
}

namespace {
constexpr const char* kBoldRed = "\033[1;31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kDim = "\033[2m";
}  // namespace

std::string colour_of(vocab::AlertSeverity severity) {
  switch (severity) {
    case vocab::AlertSeverity::Error: return kBoldRed;
    case vocab::AlertSeverity::Warning: return kYellow;
    case vocab::AlertSeverity::Info: return kDim;
  }
  return "";
}

// A confirmed finding is as bad as an error; one never reached tells as little as an INFO.
std::string colour_of(vocab::Verdict verdict) {
  switch (verdict) {
    case vocab::Verdict::Confirmed: return kBoldRed;
    case vocab::Verdict::AtRisk: return kYellow;
    case vocab::Verdict::NotObserved: return kGreen;
    case vocab::Verdict::NotReached: return kDim;
  }
  return "";
}

std::string severity_colour(const std::string& s) {
  if (const auto severity = vocab::parse<vocab::AlertSeverity>(s)) return colour_of(*severity);
  if (const auto verdict = vocab::parse<vocab::Verdict>(s)) return colour_of(*verdict);
  return "";
}

std::string short_op(const std::string& op) { return op.rfind("aten::", 0) == 0 ? op.substr(6) : op; }

namespace {

/// Control characters from the database must not move the terminal's cursor or colour.
std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  return out;
}

/// Display width: UTF-8 continuation bytes take no column.
size_t width_of(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string cut(const std::string& text, size_t width, bool from_left) {
  if (width_of(text) <= width) return text;
  if (width <= 2) return text.substr(0, width);
  // Byte-wise is fine for the ASCII paths and names we print; a split UTF-8 sequence is avoided
  // by skipping continuation bytes at the cut.
  if (from_left) {
    size_t start = text.size() - (width - 2);
    while (start < text.size() && (text[start] & 0xC0) == 0x80) ++start;
    return ".." + text.substr(start);
  }
  size_t end = width - 2;
  while (end > 0 && (text[end] & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "..";
}

}  // namespace

std::string fit(const std::string& text, size_t width, bool from_left) {
  return cut(printable(text), width, from_left);
}

std::string render_table(const nlohmann::json& rows, const std::vector<Column>& columns, bool colour, size_t width) {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> widths;
  for (const Column& column : columns) widths.push_back(width_of(column.header));
  for (const auto& row : rows) {
    std::vector<std::string> line;
    for (size_t c = 0; c < columns.size(); ++c) {
      const Column& column = columns[c];
      std::string text =
          column.text ? column.text(row) : cell_text(row.contains(column.key) ? row[column.key] : nlohmann::json());
      text = printable(text);
      widths[c] = std::max(widths[c], width_of(text));
      line.push_back(std::move(text));
    }
    cells.push_back(std::move(line));
  }
  // Take one column at a time from the widest shrinkable column, so that long cells share the
  // cut instead of one column losing everything.
  const auto total = [&] { return std::accumulate(widths.begin(), widths.end(), size_t{0}) + 2 * (widths.size() - 1); };
  while (total() > width) {
    size_t widest = columns.size();
    for (size_t c = 0; c < columns.size(); ++c) {
      if (columns[c].shrink && widths[c] > 8 && (widest == columns.size() || widths[c] > widths[widest])) widest = c;
    }
    if (widest == columns.size()) break;
    --widths[widest];
  }
  std::string out;
  const auto emit = [&](const std::vector<std::string>& line, const nlohmann::json* row) {
    std::string text;
    for (size_t c = 0; c < columns.size(); ++c) {
      std::string value = cut(line[c], widths[c], columns[c].cut_left);
      const size_t pad = widths[c] - width_of(value);
      std::string colour_code = (colour && row && columns[c].colour) ? columns[c].colour(*row) : "";
      if (!colour_code.empty()) value = colour_code + value + kReset;
      if (c) text += "  ";
      if (columns[c].right) {
        text += std::string(pad, ' ') + value;
      } else {
        text += value;
        if (c + 1 < columns.size()) text += std::string(pad, ' ');
      }
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  std::vector<std::string> header;
  for (const Column& column : columns) header.push_back(column.header);
  if (colour) out += kBold;
  emit(header, nullptr);
  if (colour) {
    out.insert(out.size() - 1, kReset);
  }
  for (size_t r = 0; r < cells.size(); ++r) emit(cells[r], &rows[r]);
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string render_csv(const nlohmann::json& rows, const std::vector<Column>& columns) {
  std::string out;
  for (size_t c = 0; c < columns.size(); ++c) out += (c ? "," : "") + csv_field(columns[c].key);
  out += "\r\n";
  for (const auto& row : rows) {
    for (size_t c = 0; c < columns.size(); ++c) {
      const nlohmann::json value = row.contains(columns[c].key) ? row[columns[c].key] : nlohmann::json();
      std::string text;
      if (value.is_string()) {
        text = value.get<std::string>();
      } else if (!value.is_null()) {
        text = json_text(value);  // full precision: CSV is for machines
      }
      out += (c ? "," : "") + csv_field(text);
    }
    out += "\r\n";
  }
  return out;
}

}  // namespace mpnanny::query
