# test_cuda_ops exits 77 (skipped) when no GPU is usable; with ASan the CUDA driver needs
# the shadow gap unprotected.
# Against the CPU emulator (HEARTH_CUDA_EMU) it gets an emulated GPU and must run.
if(TEST device.test_cuda_ops AND HEARTH_CUDA_EMU)
  set_tests_properties(device.test_cuda_ops PROPERTIES ENVIRONMENT "HEARTH_CUDAEMU_VRAM=1G" LABELS cuda)
elseif(TEST device.test_cuda_ops)
  set_tests_properties(device.test_cuda_ops PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT
    "HEARTH_BIN=$<TARGET_FILE:hearth>;HEARTH_SRC=${CMAKE_SOURCE_DIR};ASAN_OPTIONS=protect_shadow_gap=0")
endif()
