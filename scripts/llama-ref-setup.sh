#!/bin/sh
# Installs the llama.cpp reference used by the conformance tests and benchmarks:
# node-llama-cpp 3.22.1 with only its prebuilt linux-x64 CPU binaries (about 85 MB, ~15 s).
# A plain `npm i node-llama-cpp` also pulls CUDA/Vulkan/ARM variants (~725 MB) as optional
# dependencies, hence --omit=optional plus the one platform package named explicitly.
# Idempotent: does nothing when the pinned versions are already there.
# Exit status: 0 installed (or already there), 77 npm or the registry unavailable (tests skip),
# 1 anything else.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
dir="$here/tests/conformance"
ver=3.22.1

installed() {
    for p in node-llama-cpp @node-llama-cpp/linux-x64; do
        f="$dir/node_modules/$p/package.json"
        [ -f "$f" ] || return 1
        grep -q "\"version\": *\"$ver\"" "$f" || return 1
    done
    return 0
}

if installed; then
    exit 0
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    echo "llama-ref-setup: only linux-x64 prebuilt binaries are wired up here" >&2
    exit 77
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "llama-ref-setup: node/npm not found" >&2
    exit 77
fi
# Reachability first, with a short timeout, so an offline machine fails in seconds
# rather than after npm's long retry schedule.
if ! timeout 20 npm view "node-llama-cpp@$ver" version --fetch-retries=0 --fetch-timeout=10000 \
        >/dev/null 2>&1; then
    echo "llama-ref-setup: npm registry unreachable" >&2
    exit 77
fi
cd "$dir" || exit 1
log=$(mktemp "${TMPDIR:-/tmp}/llama-ref-setup.XXXXXX") || exit 1
# The package's postinstall only downloads/builds binaries we do not need; the prebuilt
# platform package loads without it.
if ! timeout 300 npm install --no-save --no-audit --no-fund --ignore-scripts --omit=optional \
        --fetch-retries=1 --fetch-timeout=30000 \
        -E "node-llama-cpp@$ver" "@node-llama-cpp/linux-x64@$ver" >"$log" 2>&1; then
    echo "llama-ref-setup: npm install failed (see $log)" >&2
    tail -5 "$log" >&2
    exit 77
fi
rm -f "$log"
installed || { echo "llama-ref-setup: install finished but $ver is not in place" >&2; exit 1; }
exit 0
