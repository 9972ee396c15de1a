# Every fuzz/fuzz_*.c target, briefly (scripts/fuzz.sh; FUZZ_SECONDS per target).
# Skipped (exit 77) where clang's libFuzzer runtime is missing (Debian: libclang-rt-14-dev).
add_test(NAME fuzz COMMAND sh ${CMAKE_SOURCE_DIR}/scripts/fuzz.sh)
set_tests_properties(fuzz PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "FUZZ_SECONDS=10" TIMEOUT 900 LABELS fuzz)
