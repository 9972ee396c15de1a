#!/bin/sh
# The whole test suite: installs dependencies, builds, runs ctest (unit, CLI, fuzz and
# llama.cpp conformance tests), then runs the suite again under ASan + UBSan.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
# Sanitizer pass: the same tests minus the llama.cpp conformance and fuzz runs
# (the fuzzers are built with ASan/UBSan already), with a Debug build.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "conformance|fuzz"
