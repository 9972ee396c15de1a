# hearth serve: robustness (bad input, bad clients, limits, auth), concurrency (a reply
# never depends on what else runs) and limits (connection floods, CORS, embeddings, context
# trimming, request log) — tests/server/*.mjs, Node's built-in modules only.
if(TARGET hr_server)
  find_program(HEARTH_NODE node)
  if(HEARTH_NODE)
    foreach(t robust concurrency limits)
      add_test(NAME server.${t} COMMAND ${HEARTH_NODE} ${CMAKE_SOURCE_DIR}/tests/server/${t}.mjs)
      set_tests_properties(server.${t} PROPERTIES
        ENVIRONMENT "HEARTH_BIN=$<TARGET_FILE:hearth>;HEARTH_SRC=${CMAKE_SOURCE_DIR}"
        LABELS server TIMEOUT 180)
    endforeach()
  else()
    message(STATUS "node not found: the hearth serve tests are not registered")
  endif()
endif()

# Unit tests of server parts that need no HTTP (tests/server/test_*.c).
if(TARGET hr_server)
  file(GLOB _server_unit CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/server/test_*.c)
  foreach(src ${_server_unit})
    get_filename_component(name ${src} NAME_WE)
    # Prefixed: other modules have tests of the same file name.
    add_executable(server_${name} ${src})
    target_link_libraries(server_${name} PRIVATE hr_server hr_testutil)
    add_test(NAME server.${name} COMMAND server_${name})
    set_tests_properties(server.${name} PROPERTIES LABELS server)
  endforeach()
endif()
