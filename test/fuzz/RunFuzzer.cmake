# cmake -DFUZZER=... -DCORPUS=dir -DSCRATCH=dir -DRUNS=N [-DDICT=file] -P RunFuzzer.cmake
# Replays the committed corpus (every past crash is in it), then mutates for RUNS iterations.
# A crash, a leak, a sanitizer report or a timeout fails the test; libFuzzer prints the input.
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH}/new ${SCRATCH}/artifacts)
set(args -runs=${RUNS} -seed=1 -timeout=30 -rss_limit_mb=4096 -max_len=65536
    -artifact_prefix=${SCRATCH}/artifacts/)
if(EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
# New inputs go to the scratch folder; the committed corpus is only read.
execute_process(COMMAND ${FUZZER} ${args} ${SCRATCH}/new ${CORPUS} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  file(GLOB found ${SCRATCH}/artifacts/*)
  message(FATAL_ERROR "${FUZZER} failed (${result}); input: ${found}\n"
          "Add it to ${CORPUS} and a regression test once fixed (test/fuzz/README.md).")
endif()
