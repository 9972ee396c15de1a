# FFN mode threshold and hearth calibrate --target-sparsity from the command line (tests/cli/threshold.sh).
add_test(NAME cli.threshold COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/threshold.sh $<TARGET_FILE:hearth>)
