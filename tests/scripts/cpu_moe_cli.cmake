# llama.cpp's --cpu-moe / --n-cpu-moe N: same tokens, and which experts go to the stand-in device (tests/cli/cpu_moe.sh).
add_test(NAME cli.cpu_moe COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/cpu_moe.sh $<TARGET_FILE:hearth>)
