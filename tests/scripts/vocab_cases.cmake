# llama.cpp's own tokenizer test cases (models/ggml-vocab-*.gguf with .inp/.out in the
# llama.cpp source bundle node-llama-cpp ships), run through `hearth tokenize`; see
# tests/conformance/vocab_cases.mjs. Skips (77) without the bundle (conformance.setup
# installs it) or without git.
find_program(HEARTH_NODE node)
if(HEARTH_NODE)
  add_test(NAME conformance.vocab
           COMMAND ${HEARTH_NODE} ${CMAKE_SOURCE_DIR}/tests/conformance/vocab_cases.mjs
                   --hearth $<TARGET_FILE:hearth> --work ${CMAKE_CURRENT_BINARY_DIR}/conformance-vocab)
  # COST: the longest test starts first even without ctest's cost data (a fresh build dir).
  set_tests_properties(conformance.vocab PROPERTIES
    FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77 TIMEOUT 900 LABELS conformance COST 120)
endif()
