# `hearth bench`: flag errors and the --json report's arithmetic (tests/cli/bench.sh).
add_test(NAME cli.bench COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/bench.sh $<TARGET_FILE:hearth>)
