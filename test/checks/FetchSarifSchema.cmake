# Fetches the official SARIF 2.1.0 JSON schema for the SARIF tests: it ships in the npm
# package @microsoft/jest-sarif (lib/schemas/sarif-2.1.0-rtm.5.json, the 2.1.0 release).
# Only the package's tarball is fetched, not its dependencies. Never fails: without the
# registry the tests fall back to Inputs/sarif-schema-2.1.0-subset.json and say so.
#   cmake -DDEST=<dir> -P FetchSarifSchema.cmake
set(schema ${DEST}/package/lib/schemas/sarif-2.1.0-rtm.5.json)
if(EXISTS ${schema})
  return()
endif()
find_program(NPM npm)
if(NOT NPM)
  message(STATUS "sarif schema: npm not found; the SARIF tests use the schema subset")
  return()
endif()
file(MAKE_DIRECTORY ${DEST})
execute_process(COMMAND ${NPM} pack @microsoft/jest-sarif@1.0.0-beta.0 --silent
                WORKING_DIRECTORY ${DEST} RESULT_VARIABLE packed OUTPUT_VARIABLE tarball
                OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 120)
if(NOT packed EQUAL 0 OR NOT EXISTS ${DEST}/${tarball})
  message(STATUS "sarif schema: npm pack failed; the SARIF tests use the schema subset")
  return()
endif()
file(ARCHIVE_EXTRACT INPUT ${DEST}/${tarball} DESTINATION ${DEST}
     PATTERNS package/lib/schemas/sarif-2.1.0-rtm.5.json package/package.json)
if(EXISTS ${schema})
  message(STATUS "sarif schema: ${schema}")
endif()
