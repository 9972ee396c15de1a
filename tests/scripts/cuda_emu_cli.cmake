# The CUDA backend on the CPU emulator through the CLI (tests/cli/cuda_emu.sh): only in a
# -DHEARTH_CUDA_EMU=ON build, where --gpu cuda reaches an emulated device.
if(HEARTH_CUDA_EMU)
  add_test(NAME cli.cuda_emu COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/cuda_emu.sh $<TARGET_FILE:hearth>)
  set_tests_properties(cli.cuda_emu PROPERTIES LABELS cuda)
endif()
