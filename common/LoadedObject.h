//===--- LoadedObject.h - mpnanny ------------------------------------------===//
//
// Where the running code lives on disk: the clang-tidy plugin finds its checks library next to
// itself, and the installed tools find their rules and pages from their own folder. Header-only:
// the plugin's guard links nothing of ours.
//
//===----------------------------------------------------------------------===//
#ifndef MPNANNY_CHECKS_LOADEDOBJECT_H
#define MPNANNY_CHECKS_LOADEDOBJECT_H

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <string>

namespace mpnanny {

/// The path of the executable or shared library that holds `Address` (pass a function of the
/// caller's own file); empty when it cannot be told.
inline std::string pathOfObjectHolding(const void *Address) {
  Dl_info Info;
  link_map *Map = nullptr;
  if (dladdr1(Address, &Info, reinterpret_cast<void **>(&Map), RTLD_DL_LINKMAP) && Map &&
      Map->l_name && *Map->l_name)
    return Map->l_name;
  // The main program's link map has no name (and dladdr's is only its argv[0]).
  char Self[PATH_MAX];
  const ssize_t Length = ::readlink("/proc/self/exe", Self, sizeof Self - 1);
  return Length > 0 ? std::string(Self, Length) : std::string();
}

} // namespace mpnanny

#endif
