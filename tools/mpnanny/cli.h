// What every subcommand shares: argument parsing, the common flags (--db, --format, --color),
// and the exit codes (0 ok, 1 a query found nothing to show where that matters, 2 usage or an
// unreadable database).
#ifndef MPNANNY_TOOLS_CLI_H
#define MPNANNY_TOOLS_CLI_H

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "database.h"
#include "format.h"

namespace mpnanny::cli {

/// A command line the subcommand cannot use; exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Options as `--name value` or `--name=value`; what is not taken is a positional or, when it
/// starts with "--", an unknown option (finish() rejects it).
class Args {
 public:
  explicit Args(std::vector<std::string> args) : args_(std::move(args)) {}
  std::optional<std::string> take(const std::string& name);
  /// Every value of a repeatable option; `--db a.db b.db` also takes the words that follow.
  std::vector<std::string> take_all(const std::string& name, bool greedy = false);
  bool flag(const std::string& name);
  /// The remaining words; throws UsageError on an unknown option.
  std::vector<std::string> finish();

 private:
  std::vector<std::string> args_;
};

struct Common {
  std::vector<std::string> db_specs;
  query::Format format = query::Format::Table;
  bool colour = false;
};
/// $MPNANNY_DIR (or nanny_logs)/metrics.db, or that directory when only per-rank files are there.
std::string default_database();
/// Takes --db (default: default_database()), --format, --color auto|always|never.
Common take_common(Args& args);
/// --rank N: a non-negative integer, or nothing when the option is not given.
std::optional<int> take_rank(Args& args);
/// Only rank `rank`'s databases when it is given (see query::select_rank), all of them otherwise.
query::Databases select_rank_option(query::Databases databases, std::optional<int> rank);
/// A decimal int64; nothing for other text or a value out of range.
std::optional<int64_t> parse_integer(const std::string& text);
/// A count option's value (--top, --max-heatmaps): non-negative, more than an int holds read as
/// the most an int holds. Throws UsageError naming `option` otherwise.
int parse_count(const std::string& option, const std::string& text);
/// Writes `contents` to `path` whole or not at all: into a temporary file beside it, renamed over
/// it once written, so that a full disk or a killed process leaves the previous file as it was.
/// Throws std::runtime_error naming the path and the system's reason.
void write_file_whole(const std::string& path, const std::string& contents);

int summary(Args args);
int alerts(Args args);
int stats(Args args);
int sites(Args args);
int report(Args args);
int compare(Args args);

}  // namespace mpnanny::cli

#endif  // MPNANNY_TOOLS_CLI_H
