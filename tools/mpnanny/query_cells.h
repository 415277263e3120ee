// What the query files share and nobody else needs: JSON cells of a row that may be null, and
// the site label every row with a source line carries.
#ifndef MPNANNY_TOOLS_MPNANNY_QUERY_CELLS_H
#define MPNANNY_TOOLS_MPNANNY_QUERY_CELLS_H

#include <cmath>
#include <cstdint>
#include <string>

#include "queries.h"

namespace mpnanny::query::cells {

inline std::string str(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : std::string();
}
inline int64_t integer(const nlohmann::json& value) { return value.is_number() ? value.get<int64_t>() : 0; }
/// JSON has no NaN or infinity: a value that is not finite is null (a gap in a plotted series).
inline nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

/// The site columns every row carries, from a row that has file/line/function.
inline void add_site(nlohmann::json& row) { row["site"] = site_label(row); }

}  // namespace mpnanny::query::cells

#endif  // MPNANNY_TOOLS_MPNANNY_QUERY_CELLS_H
