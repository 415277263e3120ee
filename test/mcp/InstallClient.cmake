# `npm ci` of test/mcp/package-lock.json into DEST: the exact SDK version the tests were
# written against. A machine without the npm registry gets a message, not a failure:
# the SDK test then skips and the raw-protocol test still runs.
file(MAKE_DIRECTORY ${DEST})
foreach(f package.json package-lock.json)
  configure_file(${SOURCE}/${f} ${DEST}/${f} COPYONLY)
endforeach()
if(EXISTS ${DEST}/node_modules/@modelcontextprotocol/sdk/package.json AND
   ${DEST}/node_modules/.package-lock.json IS_NEWER_THAN ${SOURCE}/package-lock.json)
  message(STATUS "MCP SDK already installed in ${DEST}")
  return()
endif()
if(NOT NPM)
  message(WARNING "npm not found: the MCP SDK client test will be skipped")
  return()
endif()
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --prefer-offline
                WORKING_DIRECTORY ${DEST} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 540)
if(NOT rc EQUAL 0)
  message(WARNING "npm ci of @modelcontextprotocol/sdk failed (${rc}); the MCP SDK client "
                  "test will be skipped.\n${err}")
endif()
