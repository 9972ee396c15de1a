# The shipped SwiGLU model under threshold sparsity: dense vs PyTorch, threshold 0 vs dense,
# perplexity bounds at 25% and 40% target sparsity, uniform and --allocate (tests/cli/model_swiglu.sh).
add_test(NAME cli.model_swiglu
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/model_swiglu.sh $<TARGET_FILE:hearth> ${CMAKE_SOURCE_DIR})
# Label quality: the sanitizer pass leaves it out (scripts/test.sh). It is a quality bound on
# the shipped model (perplexity of 4 calibrated files), whose code paths cli.threshold and
# engine.test_ffn_threshold already run under ASan and UBSan; in the Debug sanitizer build it
# alone would take over a minute.
set_tests_properties(cli.model_swiglu PROPERTIES LABELS quality)
