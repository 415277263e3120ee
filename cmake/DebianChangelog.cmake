# CPACK_PRE_BUILD_SCRIPTS (cmake/Packaging.cmake): after CPack has installed each component into
# its staging folder, and before it builds the .deb, writes the changelog Debian policy asks of a
# native package (usr/share/doc/PACKAGE/changelog.gz), so that only the packages carry it, not a
# plain `cmake --install`.
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)   # SOURCE_DATE_EPOCH when set
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER "${component}" upper)
  set(package "${CPACK_DEBIAN_${upper}_PACKAGE_NAME}")
  if(NOT package)
    set(package "${component}")
  endif()
  set(staging "${CPACK_TEMPORARY_DIRECTORY}/${component}")
  if(NOT IS_DIRECTORY "${staging}")
    continue()
  endif()
  set(doc "${staging}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/${package}")
  file(MAKE_DIRECTORY "${doc}")
  file(WRITE "${doc}/changelog"
    "${package} (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
    "  * Built from the source tree by cpack -G DEB (cmake/Packaging.cmake).\n\n"
    " -- ${CPACK_PACKAGE_CONTACT}  ${date}\n")
  execute_process(COMMAND gzip -9nf "${doc}/changelog" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip ${doc}/changelog failed")
  endif()
endforeach()
