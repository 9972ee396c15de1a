# The shipped SwiGLU model under threshold sparsity: dense vs PyTorch, threshold 0 vs dense,
# perplexity bounds at 25% and 40% target sparsity (tests/cli/model_swiglu.sh).
add_test(NAME cli.model_swiglu
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/model_swiglu.sh $<TARGET_FILE:hearth> ${CMAKE_SOURCE_DIR})
