# Prints the vocabulary's names to a file, then looks for them in the sources.
execute_process(COMMAND ${PRINT_NAMES} OUTPUT_FILE ${NAMES} RESULT_VARIABLE printed)
if(NOT printed EQUAL 0)
  message(FATAL_ERROR "${PRINT_NAMES} failed: ${printed}")
endif()
execute_process(COMMAND ${PYTHON} ${SCRIPT} --names ${NAMES} --source-dir ${SOURCE_DIR}
  RESULT_VARIABLE spelled)
if(NOT spelled EQUAL 0)
  message(FATAL_ERROR "vocabulary names are spelled outside common/Vocabulary.cpp (see above)")
endif()
