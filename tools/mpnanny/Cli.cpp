#include "Cli.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace mpnanny::cli {

std::optional<std::string> Args::take(const std::string& name) {
  std::optional<std::string> value;
  for (size_t i = 0; i < args_.size();) {
    const std::string& word = args_[i];
    if (word == name) {
      if (i + 1 >= args_.size()) throw UsageError(name + " needs a value");
      value = args_[i + 1];
      args_.erase(args_.begin() + i, args_.begin() + i + 2);
    } else if (word.rfind(name + "=", 0) == 0) {
      value = word.substr(name.size() + 1);
      args_.erase(args_.begin() + i);
    } else {
      ++i;
    }
  }
  return value;
}

std::vector<std::string> Args::take_all(const std::string& name, bool greedy) {
  std::vector<std::string> values;
  for (size_t i = 0; i < args_.size();) {
    const std::string& word = args_[i];
    if (word == name) {
      size_t end = i + 1;
      if (end >= args_.size()) throw UsageError(name + " needs a value");
      values.push_back(args_[end++]);
      while (greedy && end < args_.size() && args_[end].rfind("-", 0) != 0) values.push_back(args_[end++]);
      args_.erase(args_.begin() + i, args_.begin() + end);
    } else if (word.rfind(name + "=", 0) == 0) {
      values.push_back(word.substr(name.size() + 1));
      args_.erase(args_.begin() + i);
    } else {
      ++i;
    }
  }
  return values;
}

bool Args::flag(const std::string& name) {
  bool found = false;
  for (size_t i = 0; i < args_.size();) {
    if (args_[i] == name) {
      found = true;
      args_.erase(args_.begin() + i);
    } else {
      ++i;
    }
  }
  return found;
}

std::vector<std::string> Args::finish() {
  for (const std::string& word : args_) {
    if (word.size() > 1 && word[0] == '-' && !(word[1] >= '0' && word[1] <= '9')) {
      throw UsageError("unknown option " + word);
    }
  }
  return args_;
}

std::optional<int64_t> parse_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (!end || *end != '\0') return std::nullopt;
  return value;
}

std::string default_database() {
  // Where the runtime writes by default (MPNANNY_DIR overrides it there too); a multi-process
  // run leaves only metrics-rank<N>.db files, so then the directory is the answer.
  const char* env = std::getenv("MPNANNY_DIR");
  const std::filesystem::path dir = env && *env ? env : "nanny_logs";
  std::error_code error;
  if (!std::filesystem::exists(dir / "metrics.db", error) && std::filesystem::is_directory(dir, error)) {
    return dir.string();
  }
  return (dir / "metrics.db").string();
}

Common take_common(Args& args) {
  Common common;
  common.db_specs = args.take_all("--db", /*greedy=*/true);
  if (common.db_specs.empty()) common.db_specs.push_back(default_database());
  if (const auto format = args.take("--format")) {
    const auto parsed = query::parse_format(*format);
    if (!parsed) throw UsageError("--format must be table, json or csv, not '" + *format + "'");
    common.format = *parsed;
  }
  const std::string colour = args.take("--color").value_or("auto");
  if (colour == "always") {
    common.colour = true;
  } else if (colour == "never") {
    common.colour = false;
  } else if (colour == "auto") {
    // NO_COLOR (no-color.org) and pipes get plain text.
    common.colour = isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR");
  } else {
    throw UsageError("--color must be auto, always or never");
  }
  if (common.format != query::Format::Table) common.colour = false;
  return common;
}

}  // namespace mpnanny::cli
