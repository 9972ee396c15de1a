# cpu.test_prep_ggml compares the Q8_1/Q8_K activation preps and the scalar dots of the newer
# weight types with llama.cpp's x86 CPU library, which the llama_ref fixture installs;
# without it the test skips (77).
if(TEST cpu.test_prep_ggml)
  set_tests_properties(cpu.test_prep_ggml PROPERTIES FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77)
endif()
