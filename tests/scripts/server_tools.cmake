# server.tools_jinja: the server's tool rendering (server/tool_render.c) against the published
# Jinja templates (llama.cpp's models/templates/, extracted by chat.templates in
# chat_conform.cmake) rendered by Python's jinja2 (tests/server/tools_jinja.py). Skips (77)
# without python3 and jinja2, or without the templates.
if(TARGET hr_server AND DEFINED HEARTH_CHAT_TEMPLATES_DIR)
  # Debian's python3 first: apt's python3-jinja2 (scripts/deps.sh) is installed for it, not for
  # a python3 earlier on PATH (pyenv and the like).
  find_program(HEARTH_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  find_program(HEARTH_PYTHON3 python3)
  add_executable(hearth-tool-render ${CMAKE_SOURCE_DIR}/tests/server/tool_render_drv.c)
  target_link_libraries(hearth-tool-render PRIVATE hr_server)
  if(HEARTH_PYTHON3)
    add_test(NAME server.tools_jinja
             COMMAND ${HEARTH_PYTHON3} ${CMAKE_SOURCE_DIR}/tests/server/tools_jinja.py
                     $<TARGET_FILE:hearth-tool-render> ${HEARTH_CHAT_TEMPLATES_DIR})
    set_tests_properties(server.tools_jinja PROPERTIES
      FIXTURES_REQUIRED chat_templates SKIP_RETURN_CODE 77 TIMEOUT 60 LABELS server)
  endif()
endif()
