#!/bin/sh
# Installs what the hearth serve client tests need into tests/server/node_modules:
# the official `openai` client and `playwright-core` (the driver only: the browser is
# Debian's chromium, /usr/bin/chromium), at the exact versions of tests/server/package.json.
# Idempotent: does nothing when the pinned versions are already there (no network then).
# Exit status: 0 installed (or already there), 77 node/npm missing or too old, or the
# registry unavailable (the tests skip), 1 anything else.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
dir="$here/tests/server"
openai_ver=6.49.0
pw_ver=1.65.1

installed() {
    for pv in "openai:$openai_ver" "playwright-core:$pw_ver"; do
        f="$dir/node_modules/${pv%%:*}/package.json"
        [ -f "$f" ] || return 1
        grep -q "\"version\": *\"${pv#*:}\"" "$f" || return 1
    done
    return 0
}

if ! command -v node >/dev/null 2>&1; then
    echo "server-test-setup: node not found" >&2
    exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ] 2>/dev/null; then
    echo "server-test-setup: node $(node --version) is too old (playwright-core needs 20 or newer)" >&2
    exit 77
fi
if installed; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "server-test-setup: npm not found" >&2
    exit 77
fi
# Reachability first, with a short timeout, so an offline machine fails in seconds
# rather than after npm's long retry schedule.
if ! timeout 20 npm view "openai@$openai_ver" version --fetch-retries=0 --fetch-timeout=10000 \
        >/dev/null 2>&1; then
    echo "server-test-setup: npm registry unreachable" >&2
    exit 77
fi
cd "$dir" || exit 1
log=$(mktemp "${TMPDIR:-/tmp}/server-test-setup.XXXXXX") || exit 1
# Two test processes may run this at once (ctest -j): one installs, the other waits.
mkdir -p "$dir/node_modules" || exit 1
lock="$dir/node_modules/.hearth-setup.lock"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$lock"
    flock -w 300 9 || { echo "server-test-setup: timed out waiting for $lock" >&2; exit 77; }
    installed && { rm -f "$log"; exit 0; }
fi
# --ignore-scripts: playwright-core has no install step we need (no browser download).
if ! timeout 300 npm install --no-save --no-audit --no-fund --ignore-scripts \
        --no-package-lock --fetch-retries=1 --fetch-timeout=30000 \
        -E "openai@$openai_ver" "playwright-core@$pw_ver" >"$log" 2>&1; then
    echo "server-test-setup: npm install failed (see $log)" >&2
    tail -5 "$log" >&2
    exit 77
fi
rm -f "$log"
installed || { echo "server-test-setup: install finished but the pinned versions are not in place" >&2; exit 1; }
exit 0
