// The environment variables the runtime reads, each in one place: the MPNANNY_* overrides of a
// session's Options, the launcher's rank variables, and the stat kernel's instruction-set cap.
// A value that is not what its variable means is ignored with a warning naming it, never read
// as 0 or clamped.
#ifndef MPNANNY_ENVIRONMENT_H
#define MPNANNY_ENVIRONMENT_H

#include <cstdint>
#include <optional>
#include <string>

namespace mpnanny {

struct Options;

/// The MPNANNY_* variables that override Options, read together when a session starts: a
/// program (or a test) may change them between sessions.
struct Environment {
  std::optional<bool> disable;            // MPNANNY_DISABLE
  std::optional<std::string> output_dir;  // MPNANNY_DIR
  std::optional<bool> verify;             // MPNANNY_VERIFY
  std::optional<std::string> sites_file;  // MPNANNY_SITES
  std::optional<int64_t> verify_steps;    // MPNANNY_VERIFY_STEPS
  std::optional<int64_t> trace_interval;  // MPNANNY_TRACE_INTERVAL

  /// Reads every variable once; each that is set to something it cannot mean gets one warning.
  static Environment read();
  /// The overrides, over the options the program passed.
  void apply_to(Options& options) const;
  /// MPNANNY_VERIFY alone, read when the library loads: whether to start a session without user
  /// code (that session then reads the rest). Only this one, so that a program that does not
  /// verify hears nothing about the other variables until it makes a Nanny.
  static bool verify_at_load();
};

/// The ranks a distributed launcher (torchrun) sets: RANK, LOCAL_RANK and WORLD_SIZE. Read only by
/// a session that opens a database (the file's name carries the rank).
struct LaunchRanks {
  std::optional<int64_t> rank;
  std::optional<int64_t> local_rank;
  std::optional<int64_t> world_size;

  static LaunchRanks read();
};

/// MPNANNY_STATS_ISA (baseline, avx2 or avx512), which caps the CPU stat kernel's copy; empty when
/// unset. Read once, when the kernel picks its copy at load time.
std::string stat_kernel_cap_from_environment();

}  // namespace mpnanny

#endif  // MPNANNY_ENVIRONMENT_H
