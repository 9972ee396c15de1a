# hearth calibrate: outputs and errors (tests/cli/calibrate.sh).
add_test(NAME cli.calibrate COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/calibrate.sh $<TARGET_FILE:hearth>)
