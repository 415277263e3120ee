#include "cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

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
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (!end || *end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

std::optional<int> take_rank(Args& args) {
  const auto text = args.take("--rank");
  if (!text) return std::nullopt;
  const auto parsed = parse_integer(*text);
  if (!parsed || *parsed < 0 || *parsed > std::numeric_limits<int>::max()) {
    throw UsageError("--rank must be a rank number (0, 1, ...), not '" + *text + "'");
  }
  return static_cast<int>(*parsed);
}

query::Databases select_rank_option(query::Databases databases, std::optional<int> rank) {
  if (!rank) return databases;
  try {
    return query::select_rank(std::move(databases), *rank);
  } catch (const query::Error& error) {
    throw query::Error(std::string("--rank ") + std::to_string(*rank) + ": " + error.what());
  }
}

int parse_count(const std::string& option, const std::string& text) {
  const auto parsed = parse_integer(text);
  if (!parsed || *parsed < 0) throw UsageError(option + " must be a non-negative integer");
  // More than any database holds means all of them.
  return static_cast<int>(std::min<int64_t>(*parsed, std::numeric_limits<int>::max()));
}

void write_file_whole(const std::string& path, const std::string& contents) {
  const auto fail = [&path](int error) {
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(error));
  };
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    if (S_ISDIR(existing.st_mode)) fail(EISDIR);
    // A device or a pipe (/dev/stdout): written to as it is, never replaced.
    std::ofstream file(path, std::ios::binary);
    if (!(file << contents) || (file.close(), !file)) fail(errno ? errno : EIO);
    return;
  }
  std::string temporary = path + ".tmp-XXXXXX";
  const int descriptor = ::mkstemp(temporary.data());
  if (descriptor < 0) fail(errno);
  const auto give_up = [&](int error) {
    ::close(descriptor);
    ::unlink(temporary.c_str());
    fail(error);
  };
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(descriptor, 0666 & ~mask) != 0) give_up(errno);  // mkstemp's 0600 is for secrets
  for (size_t written = 0; written < contents.size();) {
    const ssize_t count = ::write(descriptor, contents.data() + written, contents.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) give_up(count < 0 ? errno : EIO);
    written += static_cast<size_t>(count);
  }
  if (::fsync(descriptor) != 0) give_up(errno);
  if (::close(descriptor) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail(error);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail(error);
  }
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
