# llama-quantize-ref (tests/tools/llama_quantize_ref.c): llama.cpp's own quantizer, loaded with
# dlopen from the prebuilt libllama the conformance setup installs; used by
# engine.test_quant_mix and the conformance tests to make llama.cpp-quantized models.
# It drives a foreign C++ library, so it is built without the sanitizers (their leak and
# ODR reports would be about libllama, not Hearth).
add_executable(llama-quantize-ref ${CMAKE_SOURCE_DIR}/tests/tools/llama_quantize_ref.c)
target_link_libraries(llama-quantize-ref PRIVATE ${CMAKE_DL_LIBS})
if(HEARTH_SANITIZE)
  target_compile_options(llama-quantize-ref PRIVATE -fno-sanitize=all)
  target_link_options(llama-quantize-ref PRIVATE -fno-sanitize=all)
endif()

# engine.test_quant_mix (registered by tests/CMakeLists.txt): Hearth's mixes against the tool.
set_property(TEST engine.test_quant_mix APPEND PROPERTY ENVIRONMENT
  "HEARTH_QREF=$<TARGET_FILE:llama-quantize-ref>")
if(HEARTH_SANITIZE) # the small shapes only (ragged rows, tied output): see the test's wanted()
  set_property(TEST engine.test_quant_mix APPEND PROPERTY ENVIRONMENT "HEARTH_QMIX_MODELS=llama-tied-4l,llama-odd-rows")
endif()
set_tests_properties(engine.test_quant_mix PROPERTIES
  FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77 TIMEOUT 600 COST 50)
