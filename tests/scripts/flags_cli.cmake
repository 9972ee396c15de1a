# llama.cpp's flags in hearth run/serve/chat: spellings, refusals, -n counts, echo, -r, -c
# checks, the sampler's range, progress off a terminal (tests/cli/flags.sh).
add_test(NAME cli.flags COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/flags.sh $<TARGET_FILE:hearth>)
