// mpnanny stats --step N: the statistics of every tensor observed at one step.
#include <iostream>

#include "cli.h"
#include "queries.h"

namespace mpnanny::cli {

int stats(Args args) {
  const Common common = take_common(args);
  query::StatsFilter filter;
  const auto step = args.take("--step");
  if (!step) throw UsageError("stats needs --step N");
  const auto parsed = parse_integer(*step);
  if (!parsed) throw UsageError("--step must be an integer, not '" + *step + "'");
  filter.step = *parsed;
  filter.site = args.take("--site");
  filter.param = args.take("--param");
  if (filter.site && filter.param) throw UsageError("give --site or --param, not both");
  const auto rank = take_rank(args);
  if (!args.finish().empty()) throw UsageError("stats takes no positional argument (use --db)");

  const auto databases = select_rank_option(query::open_databases(common.db_specs), rank);
  const nlohmann::json rows = query::stats(databases, filter);
  if (rows.empty()) {
    // Most steps are not traced: say which ones are, so the next command works.
    const auto traced = query::traced_steps(*databases.front());
    std::string hint;
    for (size_t i = 0; i < traced.size() && i < 12; ++i) hint += (i ? " " : "") + std::to_string(traced[i]);
    if (traced.size() > 12) hint += " ... " + std::to_string(traced.back());
    std::cerr << "mpnanny: nothing observed at step " << filter.step
              << (filter.site || filter.param ? " for this filter" : "")
              << (hint.empty() ? std::string("; no step was traced") : "; traced steps: " + hint) << "\n";
  }
  // min |x| > 0, mean, dtype and shape are in --format json/csv; the table keeps what fits.
  std::vector<query::Column> columns = {
      {"rank", "rank", true},
      {"seq", "seq", true},
      {"phase", "phase", false, false, false,
       [](const nlohmann::json& row) {
         const std::string phase = query::cell_text(row["phase"]);
         return phase == "forward"    ? std::string("fwd")
                : phase == "backward" ? std::string("bwd")
                : phase == "gradient" ? std::string("grad")
                                      : phase;
       }},
      {"what", "what", false, true, false,
       [](const nlohmann::json& row) {
         const std::string name = query::cell_text(row["name"]);
         return name.empty() ? query::short_op(query::cell_text(row["op"])) : name;
       }},
      {"site", "site", false, true, true,
       [](const nlohmann::json& row) {
         // A parameter's site is its name, already in "what".
         return row["file"].is_null() && row["line"].is_null() ? std::string() : query::cell_text(row["site"]);
       }},
      {"max|x|", "max_abs", true},
      {"norm", "norm", true},
      {"nan/inf", "nan_inf", true, false, false,
       [](const nlohmann::json& row) {
         return query::cell_text(row["nan_count"]) + "/" + query::cell_text(row["inf_count"]);
       },
       [](const nlohmann::json& row) {
         return (row["nan_count"].is_number() && row["nan_count"].get<int64_t>() > 0) ||
                        (row["inf_count"].is_number() && row["inf_count"].get<int64_t>() > 0)
                    ? query::colour_of(vocab::AlertSeverity::Error)
                    : std::string();
       }},
      {"f16 ovf/sub/0", vocab::name(vocab::Format::FP16), true, false, false,
       [](const nlohmann::json& row) {
         return query::cell_text(row["fp16_overflow"]) + "/" + query::cell_text(row["fp16_subnormal"]) + "/" +
                query::cell_text(row["fp16_flush"]);
       }},
  };
  // One database: its rank is in the summary, and the columns are better spent on the rows.
  if (databases.size() == 1) columns.erase(columns.begin());
  switch (common.format) {
    case query::Format::Json: std::cout << query::json_text(rows, 2) << "\n"; break;
    case query::Format::Csv: {
      std::vector<query::Column> csv;
      for (const char* key : {"rank",
                              "step",
                              "seq",
                              "phase",
                              "op",
                              "name",
                              "file",
                              "line",
                              "function",
                              "dtype",
                              "shape",
                              "numel",
                              "nan_count",
                              "inf_count",
                              "zero_count",
                              "max_abs",
                              "min_abs_nonzero",
                              "mean",
                              "norm",
                              "fp16_overflow",
                              "fp16_subnormal",
                              "fp16_flush",
                              "bf16_overflow",
                              "bf16_subnormal",
                              "bf16_flush",
                              "update_ratio"}) {
        csv.push_back({"", key});
      }
      std::cout << query::render_csv(rows, csv);
      break;
    }
    case query::Format::Table:
      if (!rows.empty()) std::cout << query::render_table(rows, columns, common.colour);
      break;
  }
  return rows.empty() ? 1 : 0;
}

}  // namespace mpnanny::cli
