# clang-format --dry-run -Werror over one layer's C++ files, listed when the test runs (a new file
# is checked without reconfiguring). Each file takes the .clang-format nearest to it.
file(GLOB_RECURSE files LIST_DIRECTORIES false
  ${LAYER}/*.cpp ${LAYER}/*.h ${LAYER}/*.cc ${LAYER}/*.hpp ${LAYER}/*.cu ${LAYER}/*.cuh)
# A link is another layer's file (runtime/include/mpnanny/Vocabulary.h is common/'s): it is
# checked there, with that layer's style.
foreach(file ${files})
  if(IS_SYMLINK ${file})
    list(REMOVE_ITEM files ${file})
  endif()
endforeach()
list(SORT files)
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "no C++ file under ${LAYER}")
endif()
execute_process(COMMAND ${CLANG_FORMAT} --dry-run -Werror ${files} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${LAYER}: files not formatted as .clang-format says (run ${CLANG_FORMAT} -i on them)")
endif()
message(STATUS "${LAYER}: ${count} files formatted")
