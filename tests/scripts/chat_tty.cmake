# hearth chat on a terminal. test_lineedit and test_chat_conv (tests/cli/, registered by
# tests/CMakeLists.txt) test files of the hearth command itself, so they compile them in;
# cli.chat_tty drives the chat through a pseudo-terminal (tests/cli/chat_tty.py: Ctrl-C, Ctrl-D,
# history, colour, paste).
foreach(t lineedit chat_conv)
  target_sources(test_${t} PRIVATE ${CMAKE_SOURCE_DIR}/cli/${t}.c)
  if(t STREQUAL chat_conv)
    target_sources(test_${t} PRIVATE ${CMAKE_SOURCE_DIR}/cli/text_file.c)
  else()
    target_sources(test_${t} PRIVATE ${CMAKE_SOURCE_DIR}/cli/lineedit_history.c)
  endif()
  target_include_directories(test_${t} PRIVATE ${CMAKE_SOURCE_DIR}/cli)
endforeach()
# Debian's python3 first (scripts/deps.sh installs its packages for that one, not for a
# python3 earlier on PATH such as pyenv's).
find_program(HEARTH_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(HEARTH_PYTHON3 python3)
if(HEARTH_PYTHON3)
  add_test(NAME cli.chat_tty COMMAND ${HEARTH_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/cli/chat_tty.py)
else()
  add_test(NAME cli.chat_tty COMMAND sh -c "echo 'skip: python3 not found (scripts/deps.sh test installs it)'; exit 77")
endif()
set_tests_properties(cli.chat_tty PROPERTIES ENVIRONMENT "HEARTH_BIN=$<TARGET_FILE:hearth>;HEARTH_SRC=${CMAKE_SOURCE_DIR}"
  SKIP_RETURN_CODE 77 TIMEOUT 60)
