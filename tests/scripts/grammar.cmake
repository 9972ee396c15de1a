# GBNF grammars (docs/grammar.md): greedy generation under a grammar gives llama.cpp's tokens
# (tests/conformance/grammar_conformance.mjs; parser and matcher unit tests are
# tests/grammar/test_gbnf.c).
find_program(HEARTH_NODE node)
if(HEARTH_NODE)
  add_test(NAME conformance.grammar
           COMMAND ${HEARTH_NODE} ${CMAKE_SOURCE_DIR}/tests/conformance/grammar_conformance.mjs
                   --hearth $<TARGET_FILE:hearth> --work ${CMAKE_CURRENT_BINARY_DIR}/conformance-grammar)
  set_tests_properties(conformance.grammar PROPERTIES
    FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS conformance)
endif()
