#!/bin/sh
# Builds every fuzz/fuzz_<name>.c as a libFuzzer target (clang, ASan + UBSan) and runs
# each for a bounded time on a temporary copy of its seed corpus fuzz/corpus/<name>/.
# Each target names the sources it needs on a line `// fuzz-sources: <globs>` (paths
# relative to the repository root).
#
# usage: scripts/fuzz.sh [NAME...]      (default: every target)
# env:   FUZZ_SECONDS   time per target (default 20)
#        FUZZ_CC        compiler (default clang)
#        FUZZ_ARTIFACTS where crashing inputs are kept (default fuzz/artifacts, git-ignored)
# exit:  0 no crash; 1 a target crashed or failed to build; 77 clang/libFuzzer missing (skip)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECS=${FUZZ_SECONDS:-20}
CC=${FUZZ_CC:-clang}
ART=${FUZZ_ARTIFACTS:-$ROOT/fuzz/artifacts}

if ! command -v "$CC" >/dev/null 2>&1; then
    echo "SKIP: $CC not found (install clang and libclang-rt-14-dev to fuzz)"
    exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hearth-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT INT TERM

printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    >"$WORK/probe.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$WORK/probe.c" -o "$WORK/probe" >/dev/null 2>&1; then
    echo "SKIP: $CC cannot link -fsanitize=fuzzer (libFuzzer runtime missing: install libclang-rt-14-dev)"
    exit 77
fi

CFLAGS="-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="$CFLAGS -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I$ROOT/src -I$ROOT/include"
mkdir -p "$ART"
status=0

if [ $# -gt 0 ]; then
    targets=""
    for n in "$@"; do targets="$targets $ROOT/fuzz/fuzz_$n.c"; done
else
    targets=$(ls "$ROOT"/fuzz/fuzz_*.c 2>/dev/null)
fi

for src in $targets; do
    name=$(basename "$src" .c)
    short=${name#fuzz_}
    if [ ! -f "$src" ]; then
        echo "FAIL $short: no such target $src"
        status=1
        continue
    fi
    globs=$(sed -n 's|^// fuzz-sources:||p' "$src" | head -n 1)
    files=$(cd "$ROOT" && for g in $globs; do for f in $g; do [ -f "$f" ] && echo "$ROOT/$f"; done; done)
    # shellcheck disable=SC2086
    if ! "$CC" $CFLAGS "$src" $files -lm -o "$WORK/$name" >"$WORK/$name.build.log" 2>&1; then
        echo "FAIL $short: build failed:"
        tail -n 30 "$WORK/$name.build.log"
        status=1
        continue
    fi
    mkdir -p "$WORK/corpus-$short"
    if [ -d "$ROOT/fuzz/corpus/$short" ]; then cp "$ROOT/fuzz/corpus/$short"/* "$WORK/corpus-$short"/ 2>/dev/null; fi
    (cd "$WORK" && TMPDIR="$WORK" "./$name" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$ART/$short-" "$WORK/corpus-$short") >"$WORK/$name.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL $short: fuzzer exited $rc; crashing input saved under $ART/$short-*"
        grep -E "ERROR|SUMMARY|runtime error|rejected|Test unit written" "$WORK/$name.log" | head -n 20
        tail -n 40 "$WORK/$name.log"
        status=1
    else
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$WORK/$name.log" | grep -o '[0-9]*$')
        last=$(grep -E '^#[0-9]+' "$WORK/$name.log" | tail -n 1)
        echo "ok $short: ${SECS}s, $(echo "$last" | cut -c1-100)${runs:+, $runs runs}"
    fi
done
exit $status
