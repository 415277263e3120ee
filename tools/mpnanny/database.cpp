#include "database.h"

#include <unistd.h>

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "MetricsSchema.h"  // the runtime writes the same version: one source of truth for the layout

namespace fs = std::filesystem;

namespace mpnanny::query {

int supported_schema_version() { return kMetricsSchemaVersion; }

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

namespace {

/// SQLite's complaint, with the file it is about: a `--db` may name several.
Error sqlite_error(sqlite3* db) {
  const char* file = sqlite3_db_filename(db, "main");
  return Error(std::string(file && *file ? file : "database") + ": SQLite: " + sqlite3_errmsg(db));
}

}  // namespace

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement_, nullptr) != SQLITE_OK) {
    Error error = sqlite_error(db_);
    sqlite3_finalize(statement_);
    statement_ = nullptr;
    throw error;
  }
}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(statement_, index, value);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(statement_, index, value);
  return *this;
}
Statement& Statement::bind(int index, const std::string& value) {
  sqlite3_bind_text(statement_, index, value.c_str(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw sqlite_error(db_);
}

int Statement::columns() const { return sqlite3_column_count(statement_); }
std::string Statement::name(int column) const { return sqlite3_column_name(statement_, column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }
int64_t Statement::integer(int column) const { return sqlite3_column_int64(statement_, column); }
double Statement::real(int column) const { return sqlite3_column_double(statement_, column); }
std::string Statement::text(int column) const {
  const auto* text = sqlite3_column_text(statement_, column);
  return text ? std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(statement_, column))
              : std::string();
}

nlohmann::json json_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

nlohmann::json Statement::value(int column) const {
  switch (sqlite3_column_type(statement_, column)) {
    case SQLITE_NULL: return nullptr;
    case SQLITE_INTEGER: return integer(column);
    case SQLITE_FLOAT: return json_number(real(column));  // the runtime stores +inf for an overflowed max
    default: return text(column);
  }
}

nlohmann::json Statement::row() const {
  nlohmann::json object = nlohmann::json::object();
  for (int c = 0; c < columns(); ++c) object[name(c)] = value(c);
  return object;
}

namespace {

bool looks_like_sqlite(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char header[16] = {};
  file.read(header, sizeof header);
  return file.gcount() == 16 && std::string(header, 15) == "SQLite format 3";
}

/// `metrics-rank3.db` -> 3; the runs table is authoritative, this is only the fallback.
int rank_from_file_name(const std::string& name) {
  const auto at = name.find("rank");
  if (at == std::string::npos) return 0;
  size_t i = at + 4;
  int rank = 0;
  bool any = false;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    rank = rank * 10 + (name[i++] - '0');
    any = true;
  }
  return any ? rank : 0;
}

}  // namespace

Database::Database(const std::string& spec) {
  path_ = spec;
  std::optional<int64_t> wanted_run;
  // `file.db#2`: the suffix is a run only when the whole spec is not itself a file.
  const auto hash = spec.rfind('#');
  if (hash != std::string::npos && !fs::exists(spec) && hash + 1 < spec.size() &&
      std::all_of(spec.begin() + hash + 1, spec.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    path_ = spec.substr(0, hash);
    int64_t run = 0;
    const auto parsed = std::from_chars(spec.data() + hash + 1, spec.data() + spec.size(), run);
    if (parsed.ec != std::errc()) throw Error(spec + ": no run " + spec.substr(hash + 1) + " (run ids are 64-bit)");
    wanted_run = run;
  }
  std::error_code error;
  if (!fs::exists(path_, error)) throw Error(path_ + ": no such file");
  // `dir#2`, or a directory where one database was asked for (compare): the runtime's file in it.
  if (fs::is_directory(path_, error) && fs::is_regular_file(fs::path(path_) / "metrics.db", error)) {
    path_ = (fs::path(path_) / "metrics.db").string();
  }
  if (fs::is_directory(path_, error)) throw Error(path_ + ": is a directory with no metrics.db file");
  if (!looks_like_sqlite(path_)) throw Error(path_ + ": not an mpnanny database (not an SQLite file)");
  // The runtime writes in WAL mode, whose readers need its -shm file: a reader that cannot create
  // one (a finished run's directory it may not write) cannot read at all. Without a -wal file
  // there is nothing beyond the main file to read, and SQLite may take the file as immutable.
  const std::string directory = fs::path(path_).has_parent_path() ? fs::path(path_).parent_path().string() : ".";
  const bool read_only_directory = ::access(directory.c_str(), W_OK) != 0;
  const bool has_log = fs::file_size(path_ + "-wal", error) > 0 && !error;
  const bool immutable = read_only_directory && !has_log;
  try {
    open_read_only(immutable);
    // The runtime may still be writing (WAL): wait a little for its transaction rather than fail.
    sqlite3_busy_timeout(db_, 2000);
    read_run(wanted_run);
  } catch (const Error& failure) {
    // A constructor that throws runs no destructor: the handle is closed here (found by fuzz_query).
    sqlite3_close_v2(db_);
    db_ = nullptr;
    if (read_only_directory && has_log) {
      throw Error(std::string(failure.what()) + " (the database has a write-ahead log, " + path_ +
                  "-wal, and reading it needs a directory this user can write: copy " + path_ + " and " + path_ +
                  "-wal to one)");
    }
    throw;
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

void Database::open_read_only(bool immutable) {
  std::string name = path_;
  int flags = SQLITE_OPEN_READONLY;
  if (immutable) {
    // A URI: the path's bytes other than unreserved ones and '/' percent-encoded ('?' and '#' end
    // a path in a URI).
    static const char* kHex = "0123456789ABCDEF";
    name = "file:";
    for (const unsigned char c : path_) {
      if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
        name += static_cast<char>(c);
      } else {
        name += '%';
        name += kHex[c >> 4];
        name += kHex[c & 15];
      }
    }
    name += "?immutable=1";
    flags |= SQLITE_OPEN_URI;
  }
  if (sqlite3_open_v2(name.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    throw Error(path_ + ": cannot open: " + message);  // the caller closes the handle a failed open allocates
  }
}

void Database::read_run(std::optional<int64_t> wanted_run) {
  if (!has_table("meta") || !has_table("runs")) {
    throw Error(path_ + ": not an mpnanny database (no meta/runs tables)");
  }
  {
    Statement statement(db_, "SELECT value FROM meta WHERE key = ?");
    statement.bind(1, std::string("schema_version"));
    if (!statement.step()) throw Error(path_ + ": not an mpnanny database (no schema_version)");
    schema_version_ = static_cast<int>(std::strtol(statement.text(0).c_str(), nullptr, 10));
  }
  if (schema_version_ > supported_schema_version()) {
    throw Error(path_ + ": written by a newer mpnanny (schema version " + std::to_string(schema_version_) +
                "; this mpnanny reads up to version " + std::to_string(supported_schema_version()) +
                "): update mpnanny");
  }
  if (schema_version_ < 1) throw Error(path_ + ": not an mpnanny database (bad schema_version)");
  {
    Statement statement(
        db_, wanted_run ? "SELECT * FROM runs WHERE run_id = ?" : "SELECT * FROM runs ORDER BY run_id DESC LIMIT 1");
    if (wanted_run) statement.bind(1, *wanted_run);
    if (!statement.step()) {
      throw Error(path_ + (wanted_run ? ": has no run " + std::to_string(*wanted_run) : std::string(": holds no run")));
    }
    run_ = statement.row();
    // The tools read the run's columns through a const reference, where a missing key is undefined
    // behaviour in nlohmann::json (found by fuzz_query: a runs table with a damaged column name).
    // A column that is not there reads as null.
    for (const char* column : {"run_id", "started_at", "ended_at", "pid", "rank", "local_rank", "world_size",
                               "precision", "options_json", "torch_version", "dropped_records"}) {
      if (!run_.contains(column)) run_[column] = nullptr;
    }
    if (!run_["run_id"].is_number_integer()) throw Error(path_ + ": not an mpnanny database (runs has no run_id)");
    run_id_ = run_["run_id"].get<int64_t>();
    rank_ = run_["rank"].is_number_integer() ? run_["rank"].get<int>()
                                             : rank_from_file_name(fs::path(path_).filename().string());
  }
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

bool Database::has_table(const std::string& name) const {
  Statement statement(db_, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  statement.bind(1, name);
  try {
    return statement.step();
  } catch (const Error&) {
    return false;
  }
}

std::unique_ptr<Statement> Database::prepare(const std::string& sql) const {
  return std::make_unique<Statement>(db_, sql);
}

std::vector<std::string> database_files(const std::string& spec) {
  std::error_code error;
  if (!fs::is_directory(spec, error)) return {spec};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(spec, error)) {
    const std::string name = entry.path().filename().string();
    // Links are listed whatever they point at, so that a caller who must keep to some folders
    // checks where each one leads before anything opens it.
    if ((entry.is_regular_file() || entry.is_symlink()) && name.rfind("metrics", 0) == 0 &&
        entry.path().extension() == ".db") {
      files.push_back(entry.path().string());
    }
  }
  if (files.empty()) throw Error(spec + ": no metrics*.db file in this directory");
  std::sort(files.begin(), files.end());
  return files;
}

Databases open_databases(const std::vector<std::string>& specs) {
  Databases databases;
  for (const std::string& spec : specs) {
    for (const std::string& file : database_files(spec)) databases.push_back(std::make_unique<Database>(file));
  }
  if (databases.empty()) throw Error("no database given");
  std::stable_sort(databases.begin(), databases.end(), [](const auto& a, const auto& b) {
    return a->rank() != b->rank() ? a->rank() < b->rank() : a->path() < b->path();
  });
  return databases;
}

Databases select_rank(Databases databases, int rank) {
  Databases selected;
  std::string present;
  for (auto& database : databases) {
    const std::string name = std::to_string(database->rank());
    if ((", " + present + ", ").find(", " + name + ", ") == std::string::npos) {
      present += (present.empty() ? "" : ", ") + name;
    }
    if (database->rank() == rank) selected.push_back(std::move(database));
  }
  if (selected.empty()) {
    throw Error("no database of rank " + std::to_string(rank) + " here (ranks present: " + present + ")");
  }
  return selected;
}

}  // namespace mpnanny::query
