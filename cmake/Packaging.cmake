# Debian packages with CPack (`cpack -G DEB` in the build folder), one per install component:
#   mpnanny         mpnanny-check, mpnanny, mpnanny-mcp, the clang-tidy plugin, rules, pages and
#                   the clang-tidy helper for CMake; depends on the exact clang-tidy-N and
#                   libclang-cppN it was built against (the plugin refuses any other)
#   libmpnanny-dev  the runtime library, its headers and CMake package; depends on libtorch-dev
# Shared-library dependencies are found by dpkg-shlibdeps. tools/deb-test.sh installs both in a
# fresh Debian root and uses them there.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mpnanny)
set(CPACK_PACKAGE_VENDOR "mpnanny")
set(CPACK_PACKAGE_CONTACT "mpnanny maintainers <mpnanny@example.com>")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would make it the synopsis of both packages; each
# component's description gives its own (first line) and its extended description (the rest).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Stripped binaries (lintian: unstripped-binary-or-object); the runtime attributes alerts with
# the training program's debug information, not its own.
set(CPACK_STRIP_FILES ON)
# usr/share/doc/PACKAGE/changelog.gz in each package (lintian: no-changelog).
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/DebianChangelog.cmake)
set(CPACK_COMPONENTS_ALL mpnanny)
if(TARGET mpnanny_runtime)
  list(APPEND CPACK_COMPONENTS_ALL libmpnanny-dev)
endif()

# The exact Debian versions of the clang-tidy and libclang-cpp the plugin was built with.
set(mpnanny_tool_depends "")
find_program(MPNANNY_DPKG_QUERY dpkg-query)
if(MPNANNY_DPKG_QUERY AND DEFINED LLVM_VERSION_MAJOR)
  foreach(package clang-tidy-${LLVM_VERSION_MAJOR} libclang-cpp${LLVM_VERSION_MAJOR})
    execute_process(COMMAND ${MPNANNY_DPKG_QUERY} -W -f=\${Version} ${package}
                    OUTPUT_VARIABLE version RESULT_VARIABLE status ERROR_QUIET)
    if(status EQUAL 0 AND version)
      list(APPEND mpnanny_tool_depends "${package} (= ${version})")
    else()
      list(APPEND mpnanny_tool_depends "${package}")
    endif()
  endforeach()
endif()
string(REPLACE ";" ", " mpnanny_tool_depends "${mpnanny_tool_depends}")

set(CPACK_DEBIAN_MPNANNY_PACKAGE_NAME mpnanny)
set(CPACK_DEBIAN_MPNANNY_PACKAGE_DEPENDS "${mpnanny_tool_depends}")
set(CPACK_COMPONENT_MPNANNY_DESCRIPTION
  "mixed-precision (fp16/bf16) linter for LibTorch C++ code
mpnanny-check and the mpnanny-tidy plugin for clang-tidy-16 find fp16/bf16
hazards in LibTorch C++ code before training (overflowing constants, eps that
flush to zero, unscaled backward passes), from a YAML knowledge base of rules
and pages. mpnanny queries and reports on what the runtime recorded;
mpnanny-mcp serves both to AI agents.")
set(CPACK_DEBIAN_LIBMPNANNY-DEV_PACKAGE_NAME libmpnanny-dev)
set(CPACK_DEBIAN_LIBMPNANNY-DEV_PACKAGE_DEPENDS "libtorch-dev")
set(CPACK_DEBIAN_LIBMPNANNY-DEV_PACKAGE_RECOMMENDS "mpnanny")
set(CPACK_COMPONENT_LIBMPNANNY-DEV_DESCRIPTION
  "mixed-precision (fp16/bf16) nanny for LibTorch C++ training
The mpnanny runtime library watches a LibTorch training run for fp16/bf16
overflow, underflow and precision loss, records alerts in SQLite and confirms
or clears the sites mpnanny-check flagged. This package holds the library, its
headers and the CMake package: find_package(mpnanny) gives mpnanny::runtime.")
# A shlibs file for libmpnanny_runtime.so.0 (lintian: no-shlibs; a package-wide switch: the
# plugin modules have no soname and are left out), and the ldconfig trigger
# (lintian: lacks-ldconfig-trigger).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/deb/libmpnanny-dev/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIBMPNANNY-DEV_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/deb/libmpnanny-dev/triggers)
include(CPack)
