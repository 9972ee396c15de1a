add_test(NAME cli.archs COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/archs.sh $<TARGET_FILE:hearth>)
