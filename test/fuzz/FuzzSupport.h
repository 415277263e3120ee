// What the fuzzers share: a private scratch folder (removed at a normal exit) to put the input
// in when the code under test reads files, and a loud failure for a broken contract.
#ifndef MPNANNY_TEST_FUZZ_FUZZSUPPORT_H
#define MPNANNY_TEST_FUZZ_FUZZSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace mpnanny::fuzz {

class ScratchDir {
 public:
  explicit ScratchDir(const char* name) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/mpnanny-fuzz-" + name + "-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::perror(path.c_str());
    std::abort();
  }
}

/// A contract the code under test broke: libFuzzer saves the input as a crash.
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "contract broken: %s\n", what.c_str());
  std::abort();
}

}  // namespace mpnanny::fuzz

#endif  // MPNANNY_TEST_FUZZ_FUZZSUPPORT_H
