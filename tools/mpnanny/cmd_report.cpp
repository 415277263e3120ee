// mpnanny report: one self-contained HTML file with the run's curves, heatmaps, localization
// and verdicts.
#include <iostream>

#include "cli.h"
#include "report.h"

namespace mpnanny::cli {

int report(Args args) {
  std::vector<std::string> specs = args.take_all("--db", /*greedy=*/true);
  auto output = args.take("-o");
  if (auto long_output = args.take("--output")) output = long_output;
  const std::string title = args.take("--title").value_or("mpnanny report");
  int max_heatmaps = 24;
  if (const auto value = args.take("--max-heatmaps")) max_heatmaps = parse_count("--max-heatmaps", *value);
  for (const std::string& extra : args.finish()) specs.push_back(extra);  // `report a.db -o r.html` too
  if (!output) throw UsageError("report needs -o FILE.html");
  if (specs.empty()) specs.push_back(default_database());

  const auto databases = query::open_databases(specs);
  const nlohmann::json data = query::report_data(databases, max_heatmaps);
  write_file_whole(*output, query::render_html(data, title));
  std::cout << "report: " << *output << "\n";
  return 0;
}

}  // namespace mpnanny::cli
