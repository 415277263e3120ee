// Maps the return addresses of the current stack to the user's source line through DWARF
// (elfutils libdw), skipping LibTorch, the C++ library and the runtime itself.
#ifndef MPNANNY_SOURCELOCATOR_H
#define MPNANNY_SOURCELOCATOR_H

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpnanny/Alert.h"

struct Dwfl;

namespace mpnanny {

class SourceLocator {
 public:
  SourceLocator();
  ~SourceLocator();
  SourceLocator(const SourceLocator&) = delete;
  SourceLocator& operator=(const SourceLocator&) = delete;

  /// The first frame of the calling thread's stack that belongs to the user's code, or null
  /// when no frame does (or symbolization is unavailable). The stack is unwound only down to
  /// that frame. The location stays valid, and the same object for the same frame, for the
  /// locator's life, so callers may key their own caches on its address. Thread-safe.
  const SourceLocation* locate_caller();

  /// True for source files that belong to LibTorch, the C++ library or the runtime's headers.
  static bool is_library_source(const std::string& file);
  /// True for a demangled function name in LibTorch's, the C++ library's or the runtime's
  /// namespaces: code of theirs compiled into the user's binary, told apart without debug info.
  static bool is_library_function(const std::string& demangled);
  /// True for shared objects whose frames are never the user's (libtorch, libc10, libc, ...).
  static bool is_library_module(const std::string& path);

 private:
  struct Verdict {
    bool user = false;
    SourceLocation location;
  };
  Verdict symbolize(uintptr_t return_address);

  std::mutex mutex_;
  Dwfl* dwfl_ = nullptr;
  bool reported_ = false;
  std::unordered_map<uintptr_t, Verdict> cache_;
};

}  // namespace mpnanny

#endif  // MPNANNY_SOURCELOCATOR_H
