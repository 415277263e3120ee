// The SQLite writer: schema, batching, reading while writing (WAL), flush and close, and the
// failures that must switch monitoring off without stopping anyone.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "TestSupport.h"
#include "mpnanny/MetricsWriter.h"

namespace mpnanny {
namespace {

using test::query;
using test::query_value;
using test::ScratchDir;

RunInfo test_run() {
  RunInfo run;
  run.precision = "fp16";
  run.options_json = "{}";
  run.rank = 3;
  return run;
}

TEST(MetricsWriter, CreatesTheSchemaWithAVersionAndTheRun) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  MetricsWriter writer(path, test_run());
  ASSERT_TRUE(writer.ok()) << writer.error();
  writer.close();
  EXPECT_EQ(query_value(path, "SELECT value FROM meta WHERE key='schema_version'"),
            std::to_string(kMetricsSchemaVersion));
  EXPECT_EQ(query_value(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_value(path, "SELECT rank FROM runs"), "3");
  EXPECT_NE(query_value(path, "SELECT ended_at FROM runs"), "NULL");
  for (const char* table : {"locations", "steps", "tensor_stats", "histograms", "alerts", "loss_scale", "memory",
                            "scalars"}) {
    EXPECT_EQ(query_value(path, std::string("SELECT count(*) FROM sqlite_master WHERE name='") + table + "'"), "1")
        << table;
  }
}

TEST(MetricsWriter, WritesEveryRecordKindAndFlushBlocksUntilWritten) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  MetricsWriter writer(path, test_run());
  ASSERT_TRUE(writer.ok());
  writer.enqueue(LocationRecord{1, {"forward", "/src/model.cpp", 42}});
  TensorRecord tensor;
  tensor.step = 7;
  tensor.op = "aten::softmax";
  tensor.location_id = 1;
  tensor.stats.numel = 4;
  tensor.stats.max_abs = 3.5;
  tensor.stats.zero_count = 4;  // no finite non-zero value: min_abs_nonzero is NULL
  tensor.stats.histogram[5] = 4;
  writer.enqueue(tensor);
  Alert alert;
  alert.step = 7;
  alert.type = AlertType::Overflow;
  alert.location = {"forward", "/src/model.cpp", 42};
  writer.enqueue(AlertRecord{alert, 0, 1});
  writer.enqueue(StepRecord{7, true, false, 1.5, 1});
  writer.enqueue(LossScaleRecord{7, 65536.0, false});
  writer.enqueue(MemoryRecord{7, 1 << 20, 3000, 4096, 5000, 8192, 2});
  writer.enqueue(ScalarRecord{7, "loss", 0.25});
  writer.flush();  // no close: a reader sees everything queued before flush()
  EXPECT_EQ(query_value(path, "SELECT file || ':' || line FROM locations WHERE location_id=1"), "/src/model.cpp:42");
  EXPECT_EQ(query_value(path, "SELECT op FROM tensor_stats WHERE step=7"), "aten::softmax");
  EXPECT_EQ(query_value(path, "SELECT min_abs_nonzero FROM tensor_stats WHERE step=7"), "NULL");
  EXPECT_EQ(query_value(path, "SELECT json_extract(counts, '$[5]') FROM histograms WHERE step=7"), "4");
  EXPECT_EQ(query_value(path, "SELECT type || '@' || line FROM alerts"), "OVERFLOW@42");
  EXPECT_EQ(query_value(path, "SELECT traced FROM steps WHERE step=7"), "1");
  EXPECT_EQ(query_value(path, "SELECT scale FROM loss_scale"), "65536.0");
  EXPECT_EQ(query_value(path, "SELECT value FROM scalars WHERE name='loss'"), "0.25");
  EXPECT_EQ(query_value(path, "SELECT rss_bytes || ' ' || cuda_allocated_bytes || ' ' || cuda_reserved_bytes || ' ' || "
                              "cuda_allocated_peak_bytes || ' ' || cuda_reserved_peak_bytes || ' ' || "
                              "cuda_alloc_retries FROM memory WHERE step=7"),
            "1048576 3000 4096 5000 8192 2");
  EXPECT_EQ(writer.written_records(), 7);
  writer.close();
}

TEST(MetricsWriter, RecordsQueuedTogetherAreCommittedInOneTransaction) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  WriterOptions options;
  options.start_paused_for_testing = true;
  MetricsWriter writer(path, test_run(), options);
  ASSERT_TRUE(writer.ok());
  for (int i = 0; i < 1000; ++i) writer.enqueue(ScalarRecord{i, "x", 1.0});
  writer.resume_for_testing();
  writer.flush();
  EXPECT_EQ(writer.committed_batches(), 1);
  writer.close();
  EXPECT_EQ(query_value(path, "SELECT count(*) FROM scalars"), "1000");
}

TEST(MetricsWriter, AReaderQueriesWhileTrainingWrites) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  MetricsWriter writer(path, test_run());
  ASSERT_TRUE(writer.ok());
  std::atomic<bool> done{false};
  int64_t reads = 0;
  std::thread reader([&] {
    // WAL: the reader neither blocks the writer nor gets SQLITE_BUSY, and sees whole batches
    // (a count that only grows).
    int64_t last = 0;
    while (!done) {
      const int64_t count = std::stoll(query_value(path, "SELECT count(*) FROM scalars"));
      EXPECT_GE(count, last);
      last = count;
      ++reads;
    }
  });
  for (int batch = 0; batch < 20; ++batch) {
    for (int i = 0; i < 100; ++i) writer.enqueue(ScalarRecord{batch, "x", static_cast<double>(i)});
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  writer.flush();
  done = true;
  reader.join();
  EXPECT_GT(reads, 0);
  EXPECT_TRUE(writer.ok());
  writer.close();
  EXPECT_EQ(query_value(path, "SELECT count(*) FROM scalars"), "2000");
}

TEST(MetricsWriter, FullQueueDropsAndCountsInsteadOfBlocking) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  WriterOptions options;
  options.queue_capacity = 10;
  options.start_paused_for_testing = true;
  MetricsWriter writer(path, test_run(), options);
  ASSERT_TRUE(writer.ok());
  int accepted = 0;
  for (int i = 0; i < 25; ++i) accepted += writer.enqueue(ScalarRecord{i, "x", 1.0});
  EXPECT_EQ(accepted, 10);
  EXPECT_EQ(writer.dropped_records(), 15);
  writer.resume_for_testing();
  writer.close();
  EXPECT_EQ(query_value(path, "SELECT count(*) FROM scalars"), "10");
  EXPECT_EQ(query_value(path, "SELECT dropped_records FROM runs"), "15");
  EXPECT_TRUE(writer.ok());
}

TEST(MetricsWriter, CloseDrainsAndIsIdempotent) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  {
    MetricsWriter writer(path, test_run());
    for (int i = 0; i < 500; ++i) writer.enqueue(ScalarRecord{i, "x", 1.0});
    writer.close();
    writer.close();
    EXPECT_FALSE(writer.enqueue(ScalarRecord{0, "late", 1.0}));
  }
  EXPECT_EQ(query_value(path, "SELECT count(*) FROM scalars"), "500");
}

TEST(MetricsWriter, UnwritablePathFailsOnceWithoutAThread) {
  // A path below a regular file fails for every user, root included (root ignores permissions).
  ScratchDir dir;
  const std::string blocker = dir.file("not-a-directory");
  FILE* file = std::fopen(blocker.c_str(), "w");
  ASSERT_TRUE(file);
  std::fclose(file);
  testing::internal::CaptureStderr();
  MetricsWriter writer(blocker + "/metrics.db", test_run());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(writer.ok());
  EXPECT_NE(warning.find("monitoring is switched off"), std::string::npos) << warning;
  EXPECT_FALSE(writer.enqueue(ScalarRecord{0, "x", 1.0}));
  writer.flush();  // returns at once
  writer.close();
}

TEST(MetricsWriter, LockedDatabaseSwitchesOffAfterTheBusyTimeout) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  WriterOptions options;
  options.busy_timeout_ms = 50;
  MetricsWriter writer(path, test_run(), options);
  ASSERT_TRUE(writer.ok());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  testing::internal::CaptureStderr();
  writer.enqueue(ScalarRecord{0, "x", 1.0});
  writer.flush();
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(writer.ok());
  EXPECT_NE(warning.find("locked"), std::string::npos) << warning;
  EXPECT_NE(warning.find("(" + path + ")"), std::string::npos) << "names the file: " << warning;
  EXPECT_FALSE(writer.enqueue(ScalarRecord{1, "x", 1.0}));
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  writer.close();
  // The lock has cleared by then: the run is recorded as ended, with what it dropped.
  EXPECT_EQ(query_value(path, "SELECT ended_at IS NOT NULL AND dropped_records >= 1 FROM runs"), "1");
}

TEST(MetricsWriter, AddsTheColumnsAFileFromAnOlderRuntimeLacks) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // The memory table as the first release wrote it, with a row of its run.
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                             "INSERT INTO meta VALUES('schema_version', '1');"
                             "CREATE TABLE memory(run_id INTEGER NOT NULL, step INTEGER NOT NULL, rss_bytes INTEGER,"
                             " cuda_allocated_bytes INTEGER, cuda_reserved_bytes INTEGER, PRIMARY KEY(run_id, step));"
                             "INSERT INTO memory VALUES(1, 0, 100, -1, -1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  MetricsWriter writer(path, test_run());
  ASSERT_TRUE(writer.ok());
  writer.enqueue(MemoryRecord{3, 200, 10, 20, 30, 40, 1});
  writer.flush();
  EXPECT_TRUE(writer.ok());
  EXPECT_EQ(query_value(path, "SELECT cuda_alloc_retries FROM memory WHERE step=3"), "1");
  EXPECT_EQ(query_value(path, "SELECT quote(cuda_reserved_peak_bytes) FROM memory WHERE step=0"), "NULL");
  writer.close();
}

TEST(MetricsWriter, RefusesANewerSchema) {
  ScratchDir dir;
  const std::string path = dir.file("metrics.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
               "INSERT INTO meta VALUES('schema_version', '99');", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  testing::internal::CaptureStderr();
  MetricsWriter writer(path, test_run());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(writer.ok());
  EXPECT_NE(warning.find("schema version 99"), std::string::npos) << warning;
}

}  // namespace
}  // namespace mpnanny
