#!/usr/bin/env bash
# Serving throughput of `hearth serve` under concurrent streamed requests, and what batching
# the decode of several requests buys: the same load (bench/loadgen.mjs: S concurrent streams,
# each issuing --requests streamed completions back to back over a fixed prompt set, max_tokens
# --gen, temperature 0) runs against a loopback server with one slot (--parallel 1: requests
# are served one at a time) and with --slots N slots (decoded together in one batch). Reported
# per stream count: generated tokens/s, time to first token and per-request latency
# percentiles (p50/p90/p99), and the batching gain (tokens/s with N slots / with 1 slot).
# Each repetition starts both servers afresh, one after the other (never both at once); the
# table gives medians over the repetitions.
# Prints one Markdown table on stdout; progress goes to stderr.
#
# usage: bench/serve.sh [-m MODEL] [--reps 3] [--streams 1,4,8] [--slots N] [--requests 4]
#                       [--gen 32] [--threads T] [--ctx C] [--hearth BIN] [--quick]
#   -m MODEL     default models/bible-drelu.gguf
#   --slots N    slots of the batched server (default: the largest stream count)
#   --requests R requests per stream per run
#   --threads T  passed to hearth serve as -t (default: the server's)
#   --ctx C      passed to hearth serve as -c (default: the server's)
#   --quick      1 repetition, streams 1,4, 2 requests per stream
# Not a ctest: its numbers depend on what else the machine is doing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
model=$root/models/bible-drelu.gguf reps=3 streams=1,4,8 slots= requests=4 gen=32 threads= ctx=
hearth=${HEARTH_BIN:-}

die() { echo "serve.sh: $*" >&2; exit 2; }
log() { echo "[serve.sh $(date +%H:%M:%S)] $*" >&2; }
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: '$2' is not a positive integer"; }

while [ $# -gt 0 ]; do
    case $1 in
    -m | --model) need "$@"; model=$2; shift ;;
    --reps) need "$@"; posint "$1" "$2"; reps=$2; shift ;;
    --streams) need "$@"; streams=$2; shift ;;
    --slots) need "$@"; posint "$1" "$2"; slots=$2; shift ;;
    --requests) need "$@"; posint "$1" "$2"; requests=$2; shift ;;
    --gen) need "$@"; posint "$1" "$2"; gen=$2; shift ;;
    --threads) need "$@"; posint "$1" "$2"; threads=$2; shift ;;
    --ctx) need "$@"; posint "$1" "$2"; ctx=$2; shift ;;
    --hearth) need "$@"; hearth=$2; shift ;;
    --quick) reps=1 streams=1,4 requests=2 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown flag '$1' (try --help)" ;;
    esac
    shift
done
IFS=, read -r -a stream_list <<<"$streams"
max_s=0
for s in "${stream_list[@]}"; do posint --streams "$s"; [ "$s" -gt "$max_s" ] && max_s=$s; done
[ -n "$slots" ] || slots=$max_s
[ -f "$model" ] || die "no model at $model"
command -v node >/dev/null 2>&1 || die "node not found (bench/loadgen.mjs needs it)"
if [ -z "$hearth" ]; then
    for c in "$root/build/hearth" $(ls -t "$root"/build*/hearth 2>/dev/null); do
        [ -x "$c" ] && { hearth=$c; break; }
    done
fi
[ -n "$hearth" ] && [ -x "$hearth" ] || die "no hearth binary (build it, or pass --hearth BIN)"
work=$(mktemp -d "${TMPDIR:-/tmp}/hearth-serve-bench.XXXXXX") || die "cannot create a work directory"
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- server --------------------------------------------------------------------------------
key=bench-$$-$RANDOM
url=
start_server() { # slots
    local extra=() i
    [ -n "$threads" ] && extra+=(-t "$threads")
    [ -n "$ctx" ] && extra+=(-c "$ctx")
    : >"$work/server.log"
    "$hearth" serve -m "$model" --port 0 --api-key "$key" --parallel "$1" "${extra[@]}" \
        >/dev/null 2>"$work/server.log" &
    pid=$!
    url=
    for ((i = 0; i < 600; i++)); do
        url=$(grep -o 'listening on http://[^ ]*' "$work/server.log" | head -n 1 | cut -d' ' -f3)
        [ -n "$url" ] && break
        kill -0 "$pid" 2>/dev/null || { pid=; die "hearth serve exited: $(tail -n 3 "$work/server.log")"; }
        sleep 0.1
    done
    [ -n "$url" ] || die "hearth serve did not report its port within 60 s"
    url=${url/0.0.0.0/127.0.0.1}
    # one request first, so that no measured run pays for cold caches
    node "$root/bench/loadgen.mjs" --url "$url" --api-key "$key" --streams 1 --requests 1 --max-tokens 4 >/dev/null ||
        die "warm-up request failed: $(tail -n 3 "$work/server.log")"
}
stop_server() {
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    local rc=$?
    pid=
    [ "$rc" = 0 ] || log "hearth serve exited with status $rc on SIGTERM"
}

# --- runs ----------------------------------------------------------------------------------
jnum() { grep -o "\"$2\":[-0-9.eE+]*" "$1" | head -n 1 | cut -d: -f2; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fmt() { awk -v a="$1" -v d="${2:-1}" 'BEGIN { if (a == "") print "-"; else printf "%.*f", d, a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

fields=(tok_s ttft_p50 ttft_p90 ttft_p99 lat_p50 lat_p90 lat_p99)
declare -A acc
failed=0
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
for ((r = 1; r <= reps; r++)); do
    for p in 1 "$slots"; do
        log "repetition $r/$reps: hearth serve --parallel $p"
        start_server "$p"
        for s in "${stream_list[@]}"; do
            out=$work/run.json
            if node "$root/bench/loadgen.mjs" --url "$url" --api-key "$key" --streams "$s" --requests "$requests" \
                    --max-tokens "$gen" >"$out" 2>"$work/err"; then
                for f in "${fields[@]}"; do acc[$s,$p,$f]+="$(jnum "$out" "$f") "; done
                log "  $s stream(s): $(jnum "$out" tok_s) tok/s, $(jnum "$out" tokens) tokens"
            else
                failed=1
                log "  $s stream(s): failed: $(tail -n 1 "$work/err")"
            fi
        done
        stop_server
        [ "$p" = "$slots" ] && break # --slots 1: one server per repetition
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# --- report --------------------------------------------------------------------------------
echo "## hearth serve: concurrent streams, 1 slot vs $slots slots"
echo
echo "Model $(basename "$model"); each stream sends $requests streamed /v1/completions back to back" \
     "(max_tokens $gen, temperature 0, 8 fixed prompts); medians over $reps repetition(s)."
flags=$([ -n "$threads" ] && echo " -t $threads")$([ -n "$ctx" ] && echo " -c $ctx")
echo "Hearth $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') ($hearth serve$flags);" \
     "$(nproc 2>/dev/null || echo '?') CPU(s)."
echo "Load average at start: $load_start; at end: $load_end."
echo "tok/s: generated tokens of all streams / wall time. TTFT: request sent to first text. Latency: request sent to [DONE]." \
     "Gain: tok/s with $slots slots / tok/s with 1 slot at the same load."
echo
echo "| streams | slots | tok/s | TTFT p50 ms | p90 | p99 | latency p50 ms | p90 | p99 | batching gain |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for s in "${stream_list[@]}"; do
    for p in 1 "$slots"; do
        declare -A m=()
        for f in "${fields[@]}"; do m[$f]=$(median <<<"${acc[$s,$p,$f]:-}"); done
        gain=""
        if [ "$p" = "$slots" ] && [ "$slots" != 1 ]; then
            gain=$(ratio "${m[tok_s]}" "$(median <<<"${acc[$s,1,tok_s]:-}")")
        fi
        echo "| $s | $p | $(fmt "${m[tok_s]}") | $(fmt "${m[ttft_p50]}") | $(fmt "${m[ttft_p90]}") |" \
             "$(fmt "${m[ttft_p99]}") | $(fmt "${m[lat_p50]}") | $(fmt "${m[lat_p90]}") | $(fmt "${m[lat_p99]}") | ${gain:-} |"
        [ "$p" = "$slots" ] && break
    done
done
exit "$failed"
