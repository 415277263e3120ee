// Read-only access to the databases the runtime writes (schema: runtime/src/MetricsWriter.cpp).
// Everything here is shared by the CLI's subcommands, the report and the MCP server, so that
// they agree on which files, ranks and runs a `--db` argument means.
#ifndef MPNANNY_TOOLS_DATABASE_H
#define MPNANNY_TOOLS_DATABASE_H

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;
struct sqlite3_stmt;

namespace mpnanny::query {

/// A database the tools cannot read: missing, not SQLite, not mpnanny's, or too new. The CLI
/// maps it to exit code 2.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One prepared statement; values are always bound, never formatted into the SQL.
/// A double as JSON, which has no infinity or NaN: those as the text "inf", "-inf" or "NaN", so
/// that they stay visible instead of turning into null.
nlohmann::json json_number(double value);

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  /// True while there is a row.
  bool step();
  int columns() const;
  std::string name(int column) const;
  bool is_null(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  /// The column as JSON: null, integer, number or string, as SQLite stored it.
  nlohmann::json value(int column) const;
  /// The whole row as an object keyed by column name.
  nlohmann::json row() const;

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
};

class Database {
 public:
  /// `spec` is a file, optionally followed by `#<run_id>` to pick a run other than the latest
  /// (a file holds one run per Nanny that wrote it). Throws Error.
  explicit Database(const std::string& spec);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  int rank() const { return rank_; }
  int64_t run_id() const { return run_id_; }
  int schema_version() const { return schema_version_; }
  /// The run's row from `runs`, as JSON.
  const nlohmann::json& run() const { return run_; }
  bool has_table(const std::string& name) const;
  std::unique_ptr<Statement> prepare(const std::string& sql) const;

 private:
  /// Checks that the file is mpnanny's and reads the run's row (the latest, or `wanted_run`).
  /// Opens path_ read-only; `immutable`: as a file nothing writes (no -shm file needed).
  void open_read_only(bool immutable);
  void read_run(std::optional<int64_t> wanted_run);

  sqlite3* db_ = nullptr;
  std::string path_;
  int rank_ = 0;
  int64_t run_id_ = 0;
  int schema_version_ = 0;
  nlohmann::json run_;
};

using Databases = std::vector<std::unique_ptr<Database>>;

/// The database files one `--db` argument names: itself (a file, with an optional `#run`), or
/// the `metrics*.db` files and links in a directory, sorted. Throws Error for a directory
/// without any.
std::vector<std::string> database_files(const std::string& spec);

/// Expands `--db` arguments: files (with an optional `#run`) and directories (every
/// `metrics*.db` inside: `metrics.db`, and `metrics-rank<N>.db` per rank of a multi-process run).
/// Sorted by rank, then path. Throws Error when nothing readable is found.
Databases open_databases(const std::vector<std::string>& specs);

/// The databases of one rank (`--rank N`): those whose run has that rank. Throws Error naming the
/// ranks that are there when none has it, so that a typo is not answered with "no alerts".
Databases select_rank(Databases databases, int rank);

/// The newest schema version this build reads (the runtime's kMetricsSchemaVersion).
int supported_schema_version();

/// JSON text of what the queries return. Database strings need not be valid UTF-8 (a file name in
/// Latin-1, a damaged row): their bad bytes become U+FFFD instead of failing the whole output.
std::string json_text(const nlohmann::json& value, int indent = -1);

}  // namespace mpnanny::query

#endif  // MPNANNY_TOOLS_DATABASE_H
