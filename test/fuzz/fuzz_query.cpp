// Fuzzes the database reader behind the CLI, the report and the MCP run tools (tools/mpnanny,
// mpnanny_query) with an SQLite file: opened, then every question the commands ask (summary,
// alerts, stats, sites, report, compare) and the table, CSV and HTML renderings of the answers.
//
// Contract: a file the tools cannot use raises an exception the CLI turns into a message and exit
// code 2 (query::Error, or another std::exception caught in main); nothing crashes, leaks, hangs or
// reads out of bounds. The page keeps every database string inside its JSON data: exactly the
// report's own <script> elements, whatever the strings hold.
#include <cstdint>
#include <string>
#include <vector>

#include "database.h"
#include "format.h"
#include "FuzzSupport.h"
#include "queries.h"
#include "report.h"

namespace q = mpnanny::query;
using nlohmann::json;

namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

void check_page(const std::string& page) {
  static const size_t expected = count(q::render_html(json::object(), "t"), "<script");
  if (count(page, "<script") != expected || count(page, "</script") != expected)
    mpnanny::fuzz::broken("a database string changed the page's markup");
}

// Every field of the rows, as the CLI's tables and CSV do with their own column lists.
void render(const json& rows) {
  if (!rows.is_array() || rows.empty() || !rows[0].is_object()) return;
  std::vector<q::Column> columns;
  for (const auto& item : rows[0].items()) {
    q::Column column;
    column.header = column.key = item.key();
    column.shrink = true;
    column.cut_left = column.key == "file";
    columns.push_back(column);
  }
  q::render_table(rows, columns, true, 60);
  q::render_csv(rows, columns);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mpnanny::fuzz::ScratchDir dir("query");
  const std::string file = dir.path() + "/metrics.db";
  mpnanny::fuzz::write_file(file, data, size);
  try {
    const q::Databases databases = q::open_databases({file});
    json summary = q::summary(databases, 3);
    render(summary);
    render(q::alerts(databases, {}));
    q::AlertFilter filter;
    filter.severity = "ERROR";
    filter.site = "model.cpp:12";
    filter.first_step = 0;
    filter.last_step = 1000;
    render(q::alerts(databases, filter));
    const std::vector<int64_t> steps = q::traced_steps(*databases.front());
    q::StatsFilter stats;
    stats.step = steps.empty() ? 0 : steps.front();
    render(q::stats(databases, stats));
    stats.param = "fc1";
    render(q::stats(databases, stats));
    stats.param.reset();
    stats.site = "softmax";
    render(q::stats(databases, stats));
    render(q::sites(databases));
    check_page(q::render_html(q::report_data(databases, 4), "report"));
    const json comparison = q::compare_runs(*databases.front(), *databases.front(), {});
    check_page(q::render_html({{"compare", comparison}}, "compare"));
  } catch (const std::exception&) {
    // The CLI's diagnosis (exit 2); what matters here is that nothing worse happened.
  }
  return 0;
}
