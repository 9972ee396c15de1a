# `hearth bench --profile`: every row, shares, calls per token, JSON (tests/cli/profile.sh).
add_test(NAME cli.profile COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/profile.sh $<TARGET_FILE:hearth>)
