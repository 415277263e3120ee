#include "Environment.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "mpnanny/Nanny.h"

namespace mpnanny {

namespace {

std::optional<std::string> text_of(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

/// An integer in [min, max]; anything else (text, a number past int64) is ignored with a warning
/// rather than read as 0 or clamped.
std::optional<int64_t> integer_of(const char* name, int64_t min, int64_t max = INT64_MAX) {
  const auto text = text_of(name);
  if (!text) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(text->c_str(), &end, 10);
  if (errno == 0 && end != text->c_str() && *end == '\0' && parsed >= min && parsed <= max) return parsed;
  std::cerr << "mpnanny: warning: ignoring " << name << "='" << *text << "' (expected an integer from " << min
            << (max == INT64_MAX ? std::string(" up") : " to " + std::to_string(max)) << ")\n";
  return std::nullopt;
}

/// A switch: 1, true, yes, on or 0, false, no, off, in any case. Anything else is ignored with a
/// warning: MPNANNY_DISABLE=no must not switch monitoring off.
std::optional<bool> switch_of(const char* name) {
  auto text = text_of(name);
  if (!text) return std::nullopt;
  for (char& c : *text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (*text == "1" || *text == "true" || *text == "yes" || *text == "on") return true;
  if (*text == "0" || *text == "false" || *text == "no" || *text == "off") return false;
  std::cerr << "mpnanny: warning: ignoring " << name << "='" << std::getenv(name)
            << "' (expected 1, true, yes, on, or 0, false, no, off)\n";
  return std::nullopt;
}

}  // namespace

Environment Environment::read() {
  Environment environment;
  environment.disable = switch_of("MPNANNY_DISABLE");
  environment.output_dir = text_of("MPNANNY_DIR");
  environment.verify = switch_of("MPNANNY_VERIFY");
  environment.sites_file = text_of("MPNANNY_SITES");
  environment.verify_steps = integer_of("MPNANNY_VERIFY_STEPS", 0);
  environment.trace_interval = integer_of("MPNANNY_TRACE_INTERVAL", 0);
  return environment;
}

bool Environment::verify_at_load() { return switch_of("MPNANNY_VERIFY").value_or(false); }

void Environment::apply_to(Options& options) const {
  if (disable && *disable) options.enabled = false;
  if (output_dir) options.output_dir = *output_dir;
  if (verify) options.verify = *verify;
  if (sites_file) options.sites_file = *sites_file;
  if (verify_steps) options.verify_steps = *verify_steps;
  if (trace_interval) options.trace_interval = *trace_interval;
}

LaunchRanks LaunchRanks::read() {
  LaunchRanks ranks;
  // A rank that is not one (RANK=abc) is ignored, with a warning: read as 0 it shared rank 0's file.
  ranks.rank = integer_of("RANK", 0, INT32_MAX);
  ranks.local_rank = integer_of("LOCAL_RANK", 0, INT32_MAX);
  ranks.world_size = integer_of("WORLD_SIZE", 1, INT32_MAX);
  return ranks;
}

std::string stat_kernel_cap_from_environment() {
  const char* cap = std::getenv("MPNANNY_STATS_ISA");
  return cap ? std::string(cap) : std::string();
}

}  // namespace mpnanny
