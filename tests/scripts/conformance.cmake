# Conformance with llama.cpp (node-llama-cpp 3.22.1, prebuilt CPU build) — see
# tests/conformance/run_conformance.mjs. The setup test installs the reference once
# (scripts/llama-ref-setup.sh); without node, npm or the registry everything here skips (77).
find_program(HEARTH_NODE node)
if(HEARTH_NODE)
  add_test(NAME conformance.setup
           COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/llama-ref-setup.sh)
  set_tests_properties(conformance.setup PROPERTIES
    FIXTURES_SETUP llama_ref SKIP_RETURN_CODE 77 TIMEOUT 400)
  foreach(group tokenize models)
    add_test(NAME conformance.${group}
             COMMAND ${HEARTH_NODE} ${CMAKE_SOURCE_DIR}/tests/conformance/run_conformance.mjs
                     ${group} --hearth $<TARGET_FILE:hearth>
                     --work ${CMAKE_CURRENT_BINARY_DIR}/conformance-${group})
    set_tests_properties(conformance.${group} PROPERTIES
      FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS conformance)
  endforeach()
  # Files quantized by llama.cpp's own quantizer (tests/tools/llama_quantize_ref.c, target
  # defined in quant_mix.cmake) in every named mix, read by Hearth.
  add_test(NAME conformance.quantized
           COMMAND ${HEARTH_NODE} ${CMAKE_SOURCE_DIR}/tests/conformance/run_conformance.mjs
                   quantized --hearth $<TARGET_FILE:hearth> --quantize $<TARGET_FILE:llama-quantize-ref>
                   --work ${CMAKE_CURRENT_BINARY_DIR}/conformance-quantized)
  set_tests_properties(conformance.quantized PROPERTIES
    FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS conformance
    ENVIRONMENT "HEARTH_SRC=${CMAKE_SOURCE_DIR}")
else()
  message(STATUS "node not found: conformance tests with llama.cpp are not registered")
endif()
