# The shipped trained model against PyTorch's perplexity (tests/cli/model.sh).
add_test(NAME cli.model
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/model.sh $<TARGET_FILE:hearth> ${CMAKE_SOURCE_DIR})
