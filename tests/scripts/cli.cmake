add_test(NAME cli.behaviour COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/cli_test.sh $<TARGET_FILE:hearth>)
