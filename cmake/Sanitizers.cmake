# MPNANNY_SANITIZE: the sanitizers every target of this build is instrumented with, as a CMake
# list (address;undefined or thread). Set by the asan and tsan presets in CMakePresets.json.
#
# Why global flags rather than per-target ones: an ASan or TSan build only sees a bug if both
# sides of it are instrumented (the runtime's writer thread and the test that drives it, the
# checks and the tool that loads them), so every object in the build gets the same flags.
# LibTorch, LLVM and SQLite come from Debian uninstrumented; the suppression files under
# test/sanitizers/ name exactly what that costs.
set(MPNANNY_SANITIZE "" CACHE STRING "Sanitizers to build with: address;undefined, or thread (empty: none)")

if(MPNANNY_SANITIZE)
  if("thread" IN_LIST MPNANNY_SANITIZE AND "address" IN_LIST MPNANNY_SANITIZE)
    message(FATAL_ERROR "MPNANNY_SANITIZE: thread and address cannot be combined (one runtime each)")
  endif()
  list(JOIN MPNANNY_SANITIZE "," mpnanny_sanitizers)
  # Frame pointers: readable stacks in reports at -O2. No recovery: a UBSan finding aborts the
  # test that hit it instead of scrolling past in its log.
  add_compile_options(-fsanitize=${mpnanny_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${mpnanny_sanitizers})
  message(STATUS "mpnanny: sanitizers ${mpnanny_sanitizers}")
endif()
