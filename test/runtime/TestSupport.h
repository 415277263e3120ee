// Helpers shared by the runtime tests: scratch directories and SQLite queries.
#ifndef MPNANNY_TEST_RUNTIME_TESTSUPPORT_H
#define MPNANNY_TEST_RUNTIME_TESTSUPPORT_H

#include <string>
#include <vector>

namespace mpnanny::test {

/// A fresh directory under the system temp dir, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

using Rows = std::vector<std::vector<std::string>>;

/// Runs `sql` on a separate read-only connection (as the CLI would) and returns all rows as
/// text (NULL as "NULL"). Fails the current test on an SQL error.
Rows query(const std::string& database, const std::string& sql);

/// The single value of a one-row, one-column query.
std::string query_value(const std::string& database, const std::string& sql);

}  // namespace mpnanny::test

#endif
