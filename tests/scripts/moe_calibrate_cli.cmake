# hearth calibrate on mixtures of experts (tests/cli/moe_calibrate.sh).
add_test(NAME cli.moe_calibrate COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/moe_calibrate.sh $<TARGET_FILE:hearth>)
