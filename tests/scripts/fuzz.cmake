# Every fuzz/fuzz_*.c target, briefly (scripts/fuzz.sh; FUZZ_SECONDS per target): every seed
# of fuzz/corpus is replayed, then 5 s of mutations per target (scripts/fuzz.sh alone: 20 s).
# Skipped (exit 77) where clang's libFuzzer runtime is missing (Debian: libclang-rt-14-dev).
# COST: ctest starts the long tests first even in a fresh build directory (no cost data yet).
add_test(NAME fuzz COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/fuzz.sh)
set_tests_properties(fuzz PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "FUZZ_SECONDS=5" TIMEOUT 900 LABELS fuzz COST 40)
