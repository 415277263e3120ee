// Crash safety of the metrics database, with a real training process (storage_child.cpp):
// killed with SIGKILL while it writes, starved of disk space, pointed at a read-only directory.
// The database must open, pass PRAGMA integrity_check and hold every step the process had
// committed; training must finish with one warning. The figures (steps committed versus steps
// found) are printed for the closing note.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "TestSupport.h"
#include "mpnanny/MetricsWriter.h"

extern char** environ;

namespace mpnanny {
namespace {

using test::query;
using test::query_value;
using test::ScratchDir;

/// What the child reported on stdout, and how it ended.
struct ChildRun {
  std::vector<long> committed;  ///< steps reported committed ("committed N"), in order
  bool done = false;            ///< "done": every training step ran
  bool stayed_on = false;       ///< the nanny was still active at the end
  int wait_status = 0;
  std::string stderr_text;

  long last_committed() const { return committed.empty() ? -1 : committed.back(); }
  bool exited_cleanly() const { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Runs `argv` with stdout on a pipe (read line by line) and stderr in `stderr_path`. When
/// `kill_when` returns true for the run so far, the child gets SIGKILL once `before_kill` returns.
ChildRun run_child(const std::vector<std::string>& argv, const std::string& stderr_path,
                   const std::function<bool(const ChildRun&)>& kill_when = nullptr,
                   const std::function<void()>& before_kill = nullptr) {
  ChildRun run;
  int out[2];
  if (pipe(out) != 0) {
    ADD_FAILURE() << "pipe failed";
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, out[1]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    ADD_FAILURE() << "cannot start " << argv[0];
    return run;
  }
  FILE* lines = fdopen(out[0], "r");
  char line[256];
  bool killed = false;
  while (std::fgets(line, sizeof line, lines)) {
    long step = 0;
    int active = 0;
    if (std::sscanf(line, "committed %ld", &step) == 1) {
      run.committed.push_back(step);
    } else if (std::sscanf(line, "done %ld active=%d", &step, &active) == 2) {
      run.done = true;
      run.stayed_on = active != 0;
    }
    if (!killed && kill_when && kill_when(run)) {
      if (before_kill) before_kill();
      kill(pid, SIGKILL);
      killed = true;  // keep reading: lines written before the kill still count
    }
  }
  std::fclose(lines);
  waitpid(pid, &run.wait_status, 0);
  run.stderr_text = read_file(stderr_path);
  return run;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

/// The checks every storage test ends with: the database opens (read-only, as the CLI opens it),
/// is intact, and holds every step of the run that was reported committed, each complete (as
/// many tensor rows as step 0: the model and the tracing are the same every step).
void expect_intact_with_committed_steps(const std::string& database, long last_committed, int64_t run_id = 1) {
  EXPECT_EQ(query_value(database, "PRAGMA integrity_check"), "ok");
  const std::string run = " WHERE run_id=" + std::to_string(run_id);
  const std::string upto = run + " AND step<=" + std::to_string(last_committed);
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM steps" + upto), std::to_string(last_committed + 1));
  if (last_committed < 0) return;
  const std::string per_step = query_value(database, "SELECT count(*) FROM tensor_stats" + run + " AND step=0");
  EXPECT_NE(per_step, "0");
  EXPECT_EQ(query(database, "SELECT DISTINCT count(*) FROM tensor_stats" + upto + " GROUP BY step"),
            (test::Rows{{per_step}}))
      << "a committed step is missing some of its tensor rows";
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM scalars" + upto), std::to_string(last_committed + 1));
}

/// True when this machine lets an unprivileged test mount a file system in its own user and
/// mount namespace (unshare -rm), which the full-disk and read-only tests need.
bool namespaces_available(const ScratchDir& dir) {
  const std::string mountpoint = dir.file("probe");
  std::filesystem::create_directory(mountpoint);
  const std::string command = "unshare -rm sh -c 'mount -t tmpfs -o size=64k tmpfs \"$1\"' sh " + mountpoint +
                              " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

/// Waits until `path` changes size or modification time (or `limit` passes); true if it did.
bool wait_for_change(const std::string& path, std::chrono::milliseconds limit) {
  struct stat before {};
  stat(path.c_str(), &before);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    struct stat now {};
    if (stat(path.c_str(), &now) == 0 &&
        (now.st_size != before.st_size || now.st_mtim.tv_nsec != before.st_mtim.tv_nsec ||
         now.st_mtim.tv_sec != before.st_mtim.tv_sec)) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return false;
}

TEST(Storage, SigkillWhileWritingLosesNothingCommitted) {
  // Several kills, each at another point of the write cycle: right at a commit report, a little
  // after it, and (-1) the moment the write-ahead log changes, that is while the writer is
  // appending the next transaction's pages.
  const struct {
    long after_commits;
    int delay_us;  // -1: when the log changes
  } kills[] = {{3, 0}, {7, 700}, {10, -1}, {14, -1}, {18, -1}};
  for (const auto& point : kills) {
    ScratchDir dir;
    bool log_was_changing = false;
    const ChildRun run = run_child(
        {MPNANNY_STORAGE_CHILD, dir.path(), "2000", "1"}, dir.file("stderr.txt"),
        [&](const ChildRun& so_far) { return static_cast<long>(so_far.committed.size()) >= point.after_commits; },
        [&] {
          if (point.delay_us >= 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(point.delay_us));
          } else {
            log_was_changing = wait_for_change(dir.file("metrics.db-wal"), std::chrono::seconds(2));
          }
        });
    ASSERT_TRUE(WIFSIGNALED(run.wait_status) && WTERMSIG(run.wait_status) == SIGKILL)
        << "the child was not killed while training; its stderr:\n" << run.stderr_text;
    ASSERT_GE(run.committed.size(), static_cast<size_t>(point.after_commits)) << run.stderr_text;
    const std::string database = dir.file("metrics.db");
    expect_intact_with_committed_steps(database, run.last_committed());
    const long found = std::stol(query_value(database, "SELECT count(*) FROM steps"));
    // The figures for the closing note: a step found beyond the last committed one was written
    // by the writer's own timer before the kill.
    if (point.delay_us >= 0) {
      std::printf("[ figures  ] SIGKILL %d us after commit report %ld: steps committed %ld, found %ld\n",
                  point.delay_us, point.after_commits, run.last_committed() + 1, found);
    } else {
      std::printf("[ figures  ] SIGKILL %s after commit report %ld: steps committed %ld, found %ld\n",
                  log_was_changing ? "while the log was being written" : "(log unchanged for 2 s)",
                  point.after_commits, run.last_committed() + 1, found);
    }
    EXPECT_GE(found, run.last_committed() + 1);
    EXPECT_EQ(query_value(database, "SELECT count(*) FROM runs WHERE ended_at IS NULL"), "1")
        << "a killed run has no end time";
    // The next run appends to the same file as its own run.
    MetricsWriter next(database, RunInfo{0, 0, 1, "fp16", "{}", ""});
    EXPECT_TRUE(next.ok()) << next.error();
    EXPECT_EQ(next.run_id(), 2);
    next.close();
    EXPECT_EQ(query_value(database, "PRAGMA integrity_check"), "ok");
  }
}

/// Full disk, simulated by a file size limit: the writer's first failing write switches the
/// nanny off with one warning, training runs to its end, and what was committed stays intact.
TEST(Storage, FileSizeLimitWarnsOnceAndTrainingCompletes) {
  ScratchDir dir;
  const ChildRun run = run_child({MPNANNY_STORAGE_CHILD, dir.path(), "400", "5", "262144"}, dir.file("stderr.txt"));
  ASSERT_TRUE(run.exited_cleanly()) << run.stderr_text;
  EXPECT_TRUE(run.done);
  EXPECT_FALSE(run.stayed_on) << "256 KiB cannot hold 400 dense steps; the limit was never hit";
  EXPECT_EQ(count_of(run.stderr_text, "mpnanny: warning"), 1u) << run.stderr_text;
  EXPECT_EQ(count_of(run.stderr_text, "switched off"), 1u) << run.stderr_text;
  std::printf("[ figures  ] file size limit 256 KiB: steps committed %ld of 400\n", run.last_committed() + 1);
  expect_intact_with_committed_steps(dir.file("metrics.db"), run.last_committed());
}

/// Full disk for real: a 256 KiB tmpfs in a private mount namespace. The files are copied out
/// before the namespace (and its tmpfs) goes away.
TEST(Storage, FullTmpfsWarnsOnceAndTrainingCompletes) {
  ScratchDir dir;
  if (!namespaces_available(dir)) GTEST_SKIP() << "unshare -rm with a tmpfs mount is not permitted here";
  const std::string mountpoint = dir.file("small-disk");
  const std::string copy = dir.file("copy");
  std::filesystem::create_directories(mountpoint);
  std::filesystem::create_directories(copy);
  const std::string script =
      "mnt=$1; out=$2; shift 2; mount -t tmpfs -o size=256k tmpfs \"$mnt\" || exit 90; \"$@\"; rc=$?; "
      "cp -p \"$mnt\"/metrics.db* \"$out\"/; exit $rc";
  const ChildRun run = run_child(
      {"unshare", "-rm", "sh", "-c", script, "sh", mountpoint, copy, MPNANNY_STORAGE_CHILD, mountpoint, "400", "5"},
      dir.file("stderr.txt"));
  ASSERT_TRUE(run.exited_cleanly()) << run.stderr_text;
  EXPECT_TRUE(run.done);
  EXPECT_FALSE(run.stayed_on) << "256 KiB cannot hold 400 dense steps; the disk never filled";
  EXPECT_EQ(count_of(run.stderr_text, "mpnanny: warning"), 1u) << run.stderr_text;
  std::printf("[ figures  ] full 256 KiB tmpfs: steps committed %ld of 400\n", run.last_committed() + 1);
  expect_intact_with_committed_steps(copy + "/metrics.db", run.last_committed());
}

/// A directory that holds an earlier run's database and is now read-only (a bind mount remounted
/// read-only, which binds root too): one warning, training completes, the earlier run intact.
TEST(Storage, ReadOnlyDirectoryWarnsOnceAndLeavesTheEarlierRunIntact) {
  ScratchDir dir;
  if (!namespaces_available(dir)) GTEST_SKIP() << "unshare -rm with a mount is not permitted here";
  const std::string logs = dir.file("logs");
  const ChildRun earlier = run_child({MPNANNY_STORAGE_CHILD, logs, "6", "3"}, dir.file("earlier.txt"));
  ASSERT_TRUE(earlier.exited_cleanly() && earlier.stayed_on) << earlier.stderr_text;
  const std::string script =
      "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro \"$1\" || exit 90; shift; exec \"$@\"";
  const ChildRun run = run_child({"unshare", "-rm", "sh", "-c", script, "sh", logs, MPNANNY_STORAGE_CHILD, logs, "20", "5"},
                                 dir.file("stderr.txt"));
  ASSERT_TRUE(run.exited_cleanly()) << run.stderr_text;
  EXPECT_TRUE(run.done);
  EXPECT_FALSE(run.stayed_on);
  EXPECT_TRUE(run.committed.empty()) << "nothing can be committed to a read-only directory";
  EXPECT_EQ(count_of(run.stderr_text, "mpnanny: warning"), 1u) << run.stderr_text;
  const std::string database = logs + "/metrics.db";
  expect_intact_with_committed_steps(database, earlier.last_committed());
  EXPECT_EQ(query_value(database, "SELECT count(*) FROM runs"), "1");
}

}  // namespace
}  // namespace mpnanny
