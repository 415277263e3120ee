# cmake -DSOURCE=... -DBINARY=... -DCXX=clang++-N -DCC=clang-N -DSCANNER_LIBS=a|b|c
#       -DGENERATOR=Ninja -DLLVM_DIR=... -P BuildFuzzers.cmake
# Configures and builds the fuzzers (clang-build/) with Clang, whatever compiler the main build uses.
string(REPLACE "|" ";" scanner_libs "${SCANNER_LIBS}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR}
          -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC}
          "-DMPNANNY_SCANNER_LIBS=${scanner_libs}" -DLLVM_DIR=${LLVM_DIR}
  RESULT_VARIABLE configured)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "configuring the fuzzers failed (${configured})")
endif()
# Two jobs: CI and the development machines have two cores.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} -j2 RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "building the fuzzers failed (${built})")
endif()
