# `hearth quantize` against `hearth synth --type`, and both commands' argument errors.
add_test(NAME cli.quantize_place COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/quantize.sh $<TARGET_FILE:hearth>)
