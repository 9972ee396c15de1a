# formats.test_quant_ggml compares Hearth's (de)quantizers with ggml's libggml-base.so, which
# the llama_ref fixture installs; without it the test skips (77). No conformance label: it runs
# in the sanitizer pass too.
if(TEST formats.test_quant_ggml)
  set_tests_properties(formats.test_quant_ggml PROPERTIES
    FIXTURES_REQUIRED llama_ref SKIP_RETURN_CODE 77)
endif()
