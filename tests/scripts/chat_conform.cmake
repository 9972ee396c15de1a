# chat.test_conform (tests/chat/test_conform.c, registered by tests/CMakeLists.txt): Hearth's
# chat renderings against llama.cpp's llama_chat_apply_template, through llama-chat-ref
# (tests/tools/llama_chat_ref.c, which dlopens the prebuilt libllama), on llama.cpp's real
# templates extracted from node-llama-cpp's source bundle by chat.templates.
# The tool drives a foreign C++ library, so it is built without the sanitizers.
add_executable(llama-chat-ref ${CMAKE_SOURCE_DIR}/tests/tools/llama_chat_ref.c)
target_link_libraries(llama-chat-ref PRIVATE ${CMAKE_DL_LIBS})
if(HEARTH_SANITIZE)
  target_compile_options(llama-chat-ref PRIVATE -fno-sanitize=all)
  target_link_options(llama-chat-ref PRIVATE -fno-sanitize=all)
endif()
add_dependencies(test_conform llama-chat-ref)

set(HEARTH_CHAT_TEMPLATES_DIR ${CMAKE_CURRENT_BINARY_DIR}/chat-templates)
add_test(NAME chat.templates
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/chat/extract_templates.sh ${CMAKE_SOURCE_DIR} ${HEARTH_CHAT_TEMPLATES_DIR})
set_tests_properties(chat.templates PROPERTIES
  FIXTURES_SETUP chat_templates FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77 TIMEOUT 120)

set_property(TEST chat.test_conform APPEND PROPERTY ENVIRONMENT
  "HEARTH_CHAT_REF=$<TARGET_FILE:llama-chat-ref>;HEARTH_CHAT_TEMPLATES=${HEARTH_CHAT_TEMPLATES_DIR}")
set_tests_properties(chat.test_conform PROPERTIES
  FIXTURES_REQUIRED "llama_ref;chat_templates" SKIP_RETURN_CODE 77 TIMEOUT 300)
