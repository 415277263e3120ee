//===--- VersionGuard.cpp - mpnanny ----------------------------------------===//
//
// libmpnanny-tidy.so, the file users pass to `clang-tidy --load`. It holds no LLVM
// symbol: it asks the running clang-tidy for its version and loads the checks
// (libmpnanny-tidy-checks.so, next to this file) only when that version is the one
// they were built against. A plugin loaded into another clang-tidy crashes on real
// files or is silently ignored; this one stops with a message naming both versions.
//
//===----------------------------------------------------------------------===//
#include "LoadedObject.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

/// The number that follows Prefix at the start of Name, or 0. By hand rather than with sscanf:
/// glibc 2.38's headers turn sscanf into __isoc23_sscanf, which an older glibc lacks, and this
/// file must load into an older system's clang-tidy to say that the versions differ.
int majorAfter(const char *Name, const char *Prefix) {
  const size_t Length = std::strlen(Prefix);
  if (std::strncmp(Name, Prefix, Length) != 0)
    return 0;
  int Major = 0;
  for (const char *C = Name + Length; *C >= '0' && *C <= '9' && Major < 100000; ++C)
    Major = Major * 10 + (*C - '0');
  return Major;
}

/// The major version of the clang libraries in this process, from the loaded
/// libclang-cpp.so.N, libLLVM-N.so or (LLVM 18 on) libLLVM.so.N, or 0 when none is found
/// (a static build).
int loadedClangMajor(std::string &Seen) {
  struct Search {
    int Major = 0;
    std::string Name;
  } S;
  dl_iterate_phdr(
      [](dl_phdr_info *Info, size_t, void *Data) -> int {
        auto *S = static_cast<Search *>(Data);
        const char *Path = Info->dlpi_name;
        if (!Path)
          return 0;
        const char *Base = std::strrchr(Path, '/');
        Base = Base ? Base + 1 : Path;
        int Major = majorAfter(Base, "libclang-cpp.so.");
        if (Major == 0)
          Major = majorAfter(Base, "libLLVM-");
        if (Major == 0)
          Major = majorAfter(Base, "libLLVM.so.");
        if (Major != 0) {
          S->Major = Major;
          S->Name = Base;
          return 1;
        }
        return 0;
      },
      &S);
  Seen = S.Name;
  return S.Major;
}

std::string directoryOfThisLibrary() {
  const std::string Path =
      mpnanny::pathOfObjectHolding(reinterpret_cast<const void *>(&directoryOfThisLibrary));
  size_t Slash = Path.rfind('/');
  return Slash == std::string::npos ? "." : Path.substr(0, Slash);
}

__attribute__((constructor)) void loadChecksIfVersionMatches() {
  std::string Library;
  int Running = loadedClangMajor(Library);
  if (Running != MPNANNY_CLANG_MAJOR) {
    std::fprintf(stderr,
                 "error: libmpnanny-tidy.so was built for clang-tidy %d, but it was loaded into "
                 "clang-tidy %s%s%s; run clang-tidy-%d --load=... instead, or build mpnanny "
                 "against that clang-tidy's LLVM (-DMPNANNY_LLVM_VERSION=, 16 to 19)\n",
                 MPNANNY_CLANG_MAJOR,
                 Running ? std::to_string(Running).c_str() : "of an unknown version",
                 Library.empty() ? "" : " (", Library.empty() ? "" : (Library + ")").c_str(),
                 MPNANNY_CLANG_MAJOR);
    std::fflush(stderr);
    std::_Exit(2);
  }
  std::string Checks = directoryOfThisLibrary() + "/" + MPNANNY_CHECKS_LIBRARY;
  if (!dlopen(Checks.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    std::fprintf(stderr, "error: libmpnanny-tidy.so could not load its checks: %s\n", dlerror());
    std::fflush(stderr);
    std::_Exit(2);
  }
}

} // namespace
