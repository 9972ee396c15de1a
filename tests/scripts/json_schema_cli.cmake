# hearth run --json-schema: bad schemas refused before loading, sampled output valid under the
# schema (tests/cli/json_schema.sh).
add_test(NAME cli.json_schema COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/json_schema.sh $<TARGET_FILE:hearth>)
