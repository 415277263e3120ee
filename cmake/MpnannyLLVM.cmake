# Finds the LLVM and Clang that the checks and the clang-tidy plugin build against.
#
# One source tree builds against LLVM/Clang 16, 17, 18 and 19 (checks/utils/LLVMCompat.h holds
# the few spellings that differ). The plugin then loads only into a clang-tidy of the same major
# version (checks/plugin/VersionGuard.cpp).
#   -DMPNANNY_LLVM_VERSION=N   build against major N (one of 16 to 19)
#   (nothing)                  the newest supported major found
#   -DLLVM_DIR=...             that installation; its major must be supported (and be N if given)
# Each LLVM's CMake package declares itself compatible only with its own version, so the search
# asks for no version and checks the major it found.
set(MPNANNY_LLVM_SUPPORTED 16 17 18 19)
set(MPNANNY_LLVM_VERSION "" CACHE STRING
    "LLVM/Clang major version for the checks (16 to 19; empty: the newest found)")

macro(mpnanny_find_llvm)
  if(MPNANNY_LLVM_VERSION)
    if(NOT MPNANNY_LLVM_VERSION IN_LIST MPNANNY_LLVM_SUPPORTED)
      message(FATAL_ERROR "MPNANNY_LLVM_VERSION=${MPNANNY_LLVM_VERSION}: supported are "
                          "${MPNANNY_LLVM_SUPPORTED}")
    endif()
    set(_mpnanny_llvm_wanted ${MPNANNY_LLVM_VERSION})
  else()
    set(_mpnanny_llvm_wanted ${MPNANNY_LLVM_SUPPORTED})
    list(REVERSE _mpnanny_llvm_wanted)
  endif()
  # A changed request forgets the installation an earlier configure found.
  if(DEFINED _MPNANNY_LLVM_REQUEST AND NOT "${_MPNANNY_LLVM_REQUEST}" STREQUAL "${MPNANNY_LLVM_VERSION}")
    unset(LLVM_DIR CACHE)
    unset(Clang_DIR CACHE)
  endif()
  set(_MPNANNY_LLVM_REQUEST "${MPNANNY_LLVM_VERSION}" CACHE INTERNAL "")

  if(LLVM_DIR)
    # Given by the user (or found by an earlier configure).
    find_package(LLVM REQUIRED CONFIG)
  else()
    foreach(_mpnanny_v IN LISTS _mpnanny_llvm_wanted)
      find_package(LLVM QUIET CONFIG NO_DEFAULT_PATH PATHS
                   /usr/lib/llvm-${_mpnanny_v}/lib/cmake/llvm          # Debian, Ubuntu
                   /usr/lib/llvm/${_mpnanny_v}/lib/cmake/llvm          # Gentoo
                   /usr/lib64/llvm${_mpnanny_v}/lib/cmake/llvm         # Fedora's compat packages
                   /opt/homebrew/opt/llvm@${_mpnanny_v}/lib/cmake/llvm
                   /usr/local/opt/llvm@${_mpnanny_v}/lib/cmake/llvm)
      if(LLVM_FOUND AND LLVM_VERSION_MAJOR STREQUAL _mpnanny_v)
        break()
      endif()
      unset(LLVM_DIR CACHE)
      set(LLVM_FOUND FALSE)
    endforeach()
    if(NOT LLVM_FOUND)
      # The distribution's unversioned LLVM, if it is one of the wanted majors.
      find_package(LLVM QUIET CONFIG)
    endif()
    if(NOT LLVM_FOUND)
      message(FATAL_ERROR "LLVM ${_mpnanny_llvm_wanted} not found (checks need one of "
                          "${MPNANNY_LLVM_SUPPORTED}): run tools/bootstrap.sh, or set LLVM_DIR")
    endif()
  endif()
  if(NOT LLVM_VERSION_MAJOR IN_LIST _mpnanny_llvm_wanted)
    message(FATAL_ERROR "LLVM ${LLVM_PACKAGE_VERSION} at ${LLVM_DIR}: the checks build against "
                        "LLVM ${_mpnanny_llvm_wanted} (set MPNANNY_LLVM_VERSION or LLVM_DIR)")
  endif()
  find_package(Clang REQUIRED CONFIG NO_DEFAULT_PATH
               PATHS ${LLVM_DIR}/../clang ${LLVM_LIBRARY_DIR}/cmake/clang)
  message(STATUS "mpnanny: checks build against LLVM/Clang ${LLVM_PACKAGE_VERSION} (${LLVM_DIR})")
endmacro()
