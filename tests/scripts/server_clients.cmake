# hearth serve against real clients (docs/server-clients.md): the official `openai` npm
# client (tests/server/openai.mjs; structured output and tool calls: tools.mjs) and the chat
# page in a headless Chromium driven by playwright-core (tests/server/web.mjs). Each test first runs scripts/server-test-setup.sh
# (pinned versions into tests/server/node_modules; a no-op once installed); without node,
# the npm registry or Chromium the tests skip (77) and say why.
if(TARGET hr_server)
  find_program(HEARTH_NODE node)
  if(HEARTH_NODE)
    foreach(client openai web tools)
      add_test(NAME server_clients.${client}
               COMMAND sh -c "sh \"$1\" && exec \"$2\" \"$3\"" server-clients
                       ${CMAKE_SOURCE_DIR}/scripts/server-test-setup.sh ${HEARTH_NODE}
                       ${CMAKE_SOURCE_DIR}/tests/server/${client}.mjs)
      set_tests_properties(server_clients.${client} PROPERTIES
        ENVIRONMENT "HEARTH_BIN=$<TARGET_FILE:hearth>;HEARTH_SRC=${CMAKE_SOURCE_DIR}"
        SKIP_RETURN_CODE 77 TIMEOUT 180 LABELS clients)
    endforeach()
  else()
    message(STATUS "node not found: hearth serve client tests are not registered")
  endif()
endif()
