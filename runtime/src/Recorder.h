// What a session records, on the way to the writer's queue: the run's database and its row, the
// user's source lines by id, and the alerts (kept in memory for Nanny::alerts(), announced on
// stderr). The last step of the op path: observe -> stats -> policy -> record.
#ifndef MPNANNY_RUNTIME_RECORDER_H
#define MPNANNY_RUNTIME_RECORDER_H

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "mpnanny/Alert.h"
#include "mpnanny/MetricsWriter.h"

namespace at {
class Tensor;
}

namespace mpnanny {

struct Options;

/// A tensor's shape as the database stores it: "[2,3]".
std::string shape_of(const at::Tensor& tensor);

/// The run's row in the database: the effective options as JSON, with the ops watched and whether
/// sites are verified (`verifying`) besides what Options holds.
std::string options_json(const Options& options, const std::vector<std::string>& watched_ops, bool verifying);

/// One per session; `options` must outlive it. The members that keep ids and alerts are called
/// with the session's lock held.
class Recorder {
 public:
  /// `on_failure` runs when the database cannot be opened or written: the session switches off.
  Recorder(const Options& options, std::function<void()> on_failure);
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// Describes the run and names its database: <output_dir>/metrics.db, or metrics-rank<N>.db
  /// where a launcher set RANK or LOCAL_RANK.
  void describe_run(std::string options_json);
  /// Opens the database now; false (having warned) where it cannot.
  bool open();
  /// Opens the database with the first record instead, so that a session that ends before it
  /// records anything leaves no empty run behind.
  void open_with_first_record() { deferred_ = true; }
  /// Queues `record` for the writer's thread; false when it was dropped.
  bool enqueue(Record record);
  /// Blocks until the writer has stored everything queued so far.
  void flush();
  /// Drains and closes the writer; what it recorded stays.
  void close();
  /// In a child process after fork(): the writer's thread is the parent's, so the writer is left
  /// alone, never destroyed (destroying it waited forever on that thread).
  void forget_after_fork() { (void)writer_.release(); }
  const std::string& database_path() const { return database_path_; }

  /// The id of a source line, 0 for none; a line seen for the first time is recorded.
  int64_t location_id_for(const SourceLocation* frame);
  /// The line of an id; null for 0 (unknown).
  const SourceLocation* location(int64_t location_id) const;
  /// Keeps `alert` (the first Options::alerts_in_memory of them), records it, and announces it on
  /// stderr as Options::verbosity says.
  void record_alert(const Alert& alert, int64_t seq, int64_t location_id);
  const std::vector<Alert>& alerts() const { return alerts_; }

 private:
  const Options& options_;
  const std::function<void()> on_failure_;
  RunInfo run_info_;
  std::string database_path_;
  std::unique_ptr<MetricsWriter> writer_;
  bool deferred_ = false;
  std::once_flag opened_;
  std::map<std::tuple<std::string, int, std::string>, int64_t> location_ids_;
  // By the locator's location object of a frame: stable for the locator's life, and looked up
  // for every observed forward op without building a key of three strings.
  std::unordered_map<const SourceLocation*, int64_t> location_ids_by_frame_;
  std::vector<SourceLocation> locations_{SourceLocation{}};  // index 0: unknown
  std::vector<Alert> alerts_;
  std::set<std::tuple<AlertType, int64_t, std::string>> announced_;
};

}  // namespace mpnanny

#endif  // MPNANNY_RUNTIME_RECORDER_H
