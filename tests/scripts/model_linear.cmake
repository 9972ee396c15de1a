# Linear predictors of the shipped dReLU model: precision, recall and perplexity bounds
# (tests/cli/model_linear.sh).
add_test(NAME cli.model_linear
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/model_linear.sh $<TARGET_FILE:hearth> ${CMAKE_SOURCE_DIR})
# Label quality: the sanitizer pass leaves it out (scripts/test.sh). Its code paths run under
# ASan and UBSan in engine.test_predictor_linear, engine.test_ffn_modes and cli.calibrate; in
# the Debug sanitizer build its fit alone took 2 1/2 minutes.
set_tests_properties(cli.model_linear PROPERTIES LABELS quality)
