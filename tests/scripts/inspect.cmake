# `hearth inspect` output and error behaviour on committed seed files.
add_test(NAME cli.inspect
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/inspect.sh $<TARGET_FILE:hearth> ${CMAKE_SOURCE_DIR})
