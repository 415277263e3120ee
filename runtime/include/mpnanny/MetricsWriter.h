// The asynchronous SQLite store behind the nanny: one writer thread, a bounded queue, batched
// transactions, WAL. The schema is documented in runtime/src/MetricsWriter.cpp next to the
// statements that create it.
#ifndef MPNANNY_METRICSWRITER_H
#define MPNANNY_METRICSWRITER_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "MetricsSchema.h"  // kMetricsSchemaVersion, which the tools read too
#include "mpnanny/Alert.h"
#include "mpnanny/TensorStats.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mpnanny {

struct RunInfo {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  std::string precision;
  std::string options_json;  ///< the effective options, after environment overrides
  std::string torch_version;
};

struct LocationRecord {
  int64_t location_id = 0;
  SourceLocation location;
};
struct StepRecord {
  int64_t step = 0;
  bool traced = false;
  bool dense = false;
  double duration_ms = 0.0;
  int64_t alert_count = 0;
};
struct TensorRecord {
  int64_t step = 0;
  int64_t seq = 0;  ///< order of observation within the step
  Phase phase = Phase::Forward;
  std::string op;
  std::string name;
  int64_t location_id = 0;  ///< 0: unknown
  std::string dtype;
  std::string shape;
  TensorStats stats;
  std::optional<double> update_ratio;
};
struct AlertRecord {
  Alert alert;
  int64_t seq = 0;
  int64_t location_id = 0;
};
struct LossScaleRecord {
  int64_t step = 0;
  double scale = 0.0;
  bool skipped = false;
};
struct MemoryRecord {
  int64_t step = 0;
  int64_t rss_bytes = -1;
  int64_t cuda_allocated_bytes = -1;
  int64_t cuda_reserved_bytes = -1;
  int64_t cuda_allocated_peak_bytes = -1;
  int64_t cuda_reserved_peak_bytes = -1;
  int64_t cuda_alloc_retries = -1;
};
struct ScalarRecord {
  int64_t step = 0;
  std::string name;
  double value = 0.0;
};

/// One rank's part of a traced step's agreement in a process group (one row of rank_agreement).
struct RankAgreementRecord {
  int64_t step = 0;
  int rank = 0;
  bool error = false;
  std::optional<std::string> bad_before;  ///< "nan", "inf" or "overflow"
  std::optional<std::string> bad_parameter;
  std::optional<double> loss_scale;
  std::optional<bool> skipped;
};

using Record = std::variant<LocationRecord, StepRecord, TensorRecord, AlertRecord, LossScaleRecord, MemoryRecord,
                            ScalarRecord, SiteVerdictRow, RankAgreementRecord>;

struct WriterOptions {
  /// Records waiting to be written; beyond it new records are dropped (and counted), so that a
  /// slow disk never stalls training.
  size_t queue_capacity = 1 << 16;
  /// How long a write waits for a database another process holds locked before giving up.
  int busy_timeout_ms = 2000;
  /// Tests only: the writer thread starts paused until resume_for_testing().
  bool start_paused_for_testing = false;
};

class MetricsWriter {
 public:
  /// Opens (creating if needed) the database at `path` and starts the writer thread. On failure
  /// the writer is inert: ok() is false, error() says why, nothing is written and no thread runs.
  MetricsWriter(const std::string& path, const RunInfo& run, const WriterOptions& options = {});
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  bool ok() const { return !failed_.load(std::memory_order_acquire); }
  std::string error() const;
  int64_t run_id() const { return run_id_; }

  /// Queues a record; false when it was dropped (queue full, writer failed or closed).
  bool enqueue(Record record);
  /// Blocks until every record queued before the call is committed (or the writer failed).
  void flush();
  /// Drains the queue, writes the run's end, joins the thread. Idempotent.
  void close();

  /// Records lost: dropped from a full queue, or in a batch that failed or came after a failure.
  int64_t dropped_records() const { return dropped_.load(); }
  int64_t written_records() const { return written_.load(); }
  /// Transactions committed so far (each holds everything that was queued when it began).
  int64_t committed_batches() const { return batches_.load(); }
  void resume_for_testing();

 private:
  void run_writer_thread();
  bool write_batch(std::deque<Record>& batch);
  bool write_record(const Record& record);
  /// Creates a table that exists only once it has rows (site_verdicts, rank_agreement) and
  /// prepares its insert, with its first row.
  bool prepare_table_with_first_row(const char* schema, const char* insert, sqlite3_stmt*& statement);
  void fail(const std::string& message);
  bool exec(const char* sql);
  /// Adds the columns a file written by an older runtime lacks; false (and failed) on an error.
  bool add_missing_columns();

  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t run_id_ = 0;
  WriterOptions options_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::deque<Record> queue_;
  bool stopping_ = false;
  bool paused_ = false;
  bool flush_requested_ = false;
  bool closed_ = false;
  int64_t enqueued_total_ = 0;  // guarded by mutex_
  int64_t handled_total_ = 0;   // guarded by mutex_: written or discarded after a failure
  std::atomic<bool> failed_{false};
  std::atomic<int64_t> dropped_{0};
  std::atomic<int64_t> written_{0};
  std::atomic<int64_t> batches_{0};
  std::string error_;  // guarded by mutex_

  struct Statements;
  std::unique_ptr<Statements> statements_;
};

}  // namespace mpnanny

#endif  // MPNANNY_METRICSWRITER_H
