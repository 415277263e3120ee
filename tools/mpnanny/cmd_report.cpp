// mpnanny report: one self-contained HTML file with the run's curves, heatmaps, localization
// and verdicts.
#include <fstream>
#include <iostream>

#include "Cli.h"
#include "Report.h"

namespace mpnanny::cli {

int report(Args args) {
  std::vector<std::string> specs = args.take_all("--db", /*greedy=*/true);
  auto output = args.take("-o");
  if (auto long_output = args.take("--output")) output = long_output;
  const std::string title = args.take("--title").value_or("mpnanny report");
  int max_heatmaps = 24;
  if (const auto value = args.take("--max-heatmaps")) {
    const auto parsed = parse_integer(*value);
    if (!parsed || *parsed < 0) throw UsageError("--max-heatmaps must be a non-negative integer");
    max_heatmaps = static_cast<int>(*parsed);
  }
  for (const std::string& extra : args.finish()) specs.push_back(extra);  // `report a.db -o r.html` too
  if (!output) throw UsageError("report needs -o FILE.html");
  if (specs.empty()) specs.push_back(default_database());

  const auto databases = query::open_databases(specs);
  const nlohmann::json data = query::report_data(databases, max_heatmaps);
  std::ofstream file(*output, std::ios::binary | std::ios::trunc);
  if (!file) throw UsageError("cannot write " + *output);
  file << query::render_html(data, title);
  file.close();
  if (!file) throw UsageError("cannot write " + *output);
  std::cout << "report: " << *output << "\n";
  return 0;
}

}  // namespace mpnanny::cli
