# GPU flags of hearth run and bench, the stand-in device end to end, the GPU index files (tests/cli/hybrid.sh).
add_test(NAME cli.hybrid COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/hybrid.sh $<TARGET_FILE:hearth> ${CMAKE_SOURCE_DIR}/models)
