# Only in a -DHEARTH_CUDA_EMU=ON build, where --gpu cuda reaches an emulated device
# (tests/cudaemu): the CUDA backend through the CLI (tests/cli/cuda_emu.sh), and the
# whole-model hybrid test run on it instead of the stand-in, with streams that run only
# when waited for (a missing sync then fails every time).
if(HEARTH_CUDA_EMU)
  add_test(NAME cli.cuda_emu COMMAND sh ${CMAKE_SOURCE_DIR}/tests/cli/cuda_emu.sh $<TARGET_FILE:hearth>)
  add_test(NAME engine.test_hybrid_model_cuda COMMAND test_hybrid_model WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(engine.test_hybrid_model_cuda PROPERTIES ENVIRONMENT
    "HEARTH_SRC=${CMAKE_SOURCE_DIR};HEARTH_TEST_GPU=cuda;HEARTH_CUDAEMU_VRAM=2G;HEARTH_CUDAEMU_LAZY=1")
  add_test(NAME engine.test_hybrid_attn_cuda COMMAND test_hybrid_attn WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(engine.test_hybrid_attn_cuda PROPERTIES ENVIRONMENT
    "HEARTH_SRC=${CMAKE_SOURCE_DIR};HEARTH_TEST_GPU=cuda;HEARTH_CUDAEMU_VRAM=2G;HEARTH_CUDAEMU_LAZY=1")
  add_test(NAME engine.test_hybrid_moe_cuda COMMAND test_hybrid_moe WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(engine.test_hybrid_moe_cuda PROPERTIES ENVIRONMENT
    "HEARTH_SRC=${CMAKE_SOURCE_DIR};HEARTH_TEST_GPU=cuda;HEARTH_CUDAEMU_VRAM=2G;HEARTH_CUDAEMU_LAZY=1")
  add_test(NAME engine.test_hybrid_moe_neurons_cuda COMMAND test_hybrid_moe_neurons WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(engine.test_hybrid_moe_neurons_cuda PROPERTIES ENVIRONMENT
    "HEARTH_SRC=${CMAKE_SOURCE_DIR};HEARTH_TEST_GPU=cuda;HEARTH_CUDAEMU_VRAM=2G;HEARTH_CUDAEMU_LAZY=1")
  # hot neurons of host experts in predicted mode (masked by the host's expert predictors)
  add_test(NAME engine.test_hybrid_moe_pred_cuda COMMAND test_hybrid_moe_pred WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(engine.test_hybrid_moe_pred_cuda PROPERTIES ENVIRONMENT
    "HEARTH_SRC=${CMAKE_SOURCE_DIR};HEARTH_TEST_GPU=cuda;HEARTH_CUDAEMU_VRAM=2G;HEARTH_CUDAEMU_LAZY=1" LABELS cuda)
  # FFN mode threshold's split (hot neurons' threshold test on the device)
  add_test(NAME engine.test_hybrid_thr_cuda COMMAND test_hybrid_thr WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(engine.test_hybrid_thr_cuda PROPERTIES ENVIRONMENT
    "HEARTH_SRC=${CMAKE_SOURCE_DIR};HEARTH_TEST_GPU=cuda;HEARTH_CUDAEMU_VRAM=2G;HEARTH_CUDAEMU_LAZY=1" LABELS cuda)
  set_tests_properties(cli.cuda_emu engine.test_hybrid_model_cuda engine.test_hybrid_attn_cuda engine.test_hybrid_moe_cuda
    engine.test_hybrid_moe_neurons_cuda PROPERTIES LABELS cuda)
endif()
