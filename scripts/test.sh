#!/bin/sh
# The whole test suite: installs dependencies, builds, runs ctest (unit, CLI, fuzz and
# llama.cpp conformance tests), then runs the suite again under ASan + UBSan and, beside it,
# the CUDA backend on the CPU emulator.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
# Sanitizer pass: the same tests minus the llama.cpp conformance and fuzz runs (the fuzzers
# are built with ASan/UBSan already) and the shipped models' quality bounds (label quality:
# long perplexity runs over code the other tests cover), with a Debug build (at -O1, as ASan
# advises: CMakeLists.txt); engine.test_quant_mix compares only its small shapes there. It is
# built without the CUDA backend: nvcc's code takes no sanitizer flags, the Release build above
# compiles it for every shipped architecture, and the emulator pass below runs it.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON -DHEARTH_CUDA=OFF >/dev/null
cmake --build build-asan -j"$jobs"
# CUDA pass without a GPU: the CUDA backend compiled against the CPU emulator
# (tests/cudaemu, docs/cuda.md) runs its operation test and CLI checks, then the GPU check
# script itself (hybrid logits and greedy tokens against the CPU on synthetic and shipped
# models at 0, 25 and 100% of the FFN on the device; a small mixture of experts with 0, a
# quarter and all experts on the device and with the expert cache); its tables go to
# build-emu/gpu-check.md. The script's runs keep one core busy (the emulated device's stream),
# so it runs beside the sanitizer pass's tests.
cmake -S . -B build-emu -DCMAKE_BUILD_TYPE=Release -DHEARTH_CUDA_EMU=ON -DHEARTH_SERVER=OFF >/dev/null
cmake --build build-emu -j"$jobs" --target hearth test_cuda_ops test_hybrid_model test_hybrid_attn test_hybrid_moe \
    test_hybrid_moe_neurons test_hybrid_moe_pred test_hybrid_thr
ctest --test-dir build-emu --output-on-failure -j"$jobs" -L cuda
scripts/gpu-check.sh --emu --build-dir build-emu --jobs "$jobs" >build-emu/gpu-check.md 2>build-emu/gpu-check.log &
check=$!
asan=0 emu=0
ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "conformance|fuzz|quality" || asan=$?
wait "$check" || emu=$?
cat build-emu/gpu-check.log build-emu/gpu-check.md
[ "$asan" -eq 0 ] || { echo "test.sh: the sanitizer pass failed (ctest exit $asan)"; exit 1; }
[ "$emu" -eq 0 ] || { echo "test.sh: scripts/gpu-check.sh --emu failed (exit $emu; build-emu/gpu-check.log)"; exit 1; }
