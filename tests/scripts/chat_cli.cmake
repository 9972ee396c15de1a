# `hearth chat` on the shipped model: replies, KV cache reuse against `hearth run`, /reset,
# dropping old turns, flag errors (tests/cli/chat.sh).
add_test(NAME cli.chat COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/chat.sh)
set_tests_properties(cli.chat PROPERTIES ENVIRONMENT "HEARTH_BIN=$<TARGET_FILE:hearth>;HEARTH_SRC=${CMAKE_SOURCE_DIR}")
