# House rule: the library and its public headers are formatted as .clang-format says (clang-format -i
# applies it). Run: cmake -DSOURCE_DIR=<repo> -DCLANG_FORMAT=<clang-format> -P test/house_rules_format.cmake
file(GLOB_RECURSE sources "${SOURCE_DIR}/lib/*.h" "${SOURCE_DIR}/lib/*.cpp" "${SOURCE_DIR}/include/*.h")
execute_process(COMMAND ${CLANG_FORMAT} --style=file --dry-run --Werror ${sources}
                WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE failed ERROR_VARIABLE diagnostics)
if(failed)
  message(FATAL_ERROR "files not formatted as .clang-format says; run clang-format -i on them:\n${diagnostics}")
endif()
list(LENGTH sources checked)
message(STATUS "house rules: ${checked} files formatted")
