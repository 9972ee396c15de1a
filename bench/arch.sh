#!/usr/bin/env bash
# Decode speed of every dense architecture relative to `llama` at one shape: synthetic Q4_0
# models written by hearth synth (n_embd 1024, 8 layers, 16 heads / 4 KV heads, n_ff 2816,
# vocab 32000; gemma2 with attention and final soft-caps, gemma3 with the final soft-cap and its
# 5:1 sliding pattern, windows wider than the context so every layer attends to all of it).
# Single-run `hearth bench` calls interleaved round by round (order reversed every other round),
# so that slow phases of a shared machine hit every architecture alike; reports the median
# tok/s of each and two ratios to llama: the ratio of the medians and the median of the
# per-round ratios (the second cancels drifts slower than one round).
# Prints one Markdown table on stdout; progress goes to stderr.
#
# usage: bench/arch.sh [--threads 1,2] [--rounds 21] [--gen 128] [--prompt 16]
#                      [--archs llama,qwen2,qwen3,phi3,gemma2,gemma3] [--hearth BIN] [--dir CACHE]
#   CACHE  generated models; default $HEARTH_BENCH_DIR or build-bench/
# Not a ctest: it takes minutes and its numbers depend on what else the machine is doing.
set -euo pipefail
me=arch.sh
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"

threads=1,2 rounds=21 gen=128 prompt=16 archs=llama,qwen2,qwen3,phi3,gemma2,gemma3
hearth="" membw="" cache=${HEARTH_BENCH_DIR:-$root/build-bench}
while [ $# -gt 0 ]; do
    case $1 in
    --threads) need "$@"; threads=$2; shift 2 ;;
    --rounds) need "$@"; posint "$1" "$2"; rounds=$2; shift 2 ;;
    --gen) need "$@"; posint "$1" "$2"; gen=$2; shift 2 ;;
    --prompt) need "$@"; posint "$1" "$2"; prompt=$2; shift 2 ;;
    --archs) need "$@"; archs=$2; shift 2 ;;
    --hearth) need "$@"; hearth=$2; shift 2 ;;
    --dir) need "$@"; cache=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown flag '$1' (--help lists them)" ;;
    esac
done
for t in ${threads//,/ }; do posint --threads "$t"; done
[[ ,$archs, == *,llama,* ]] || die "--archs must include llama (the ratios are to it)"
mkdir -p "$cache"
bench_find_tools

shape="--type q4_0 --n-embd 1024 --n-layer 8 --n-head 16 --n-head-kv 4 --n-ff 2816 --n-vocab 32000 --seed 3"
model() { echo "$cache/arch-$1-q4_0-e1024-l8.gguf"; }
for a in ${archs//,/ }; do
    f=$(model "$a")
    [ -s "$f" ] && continue
    case $a in
    gemma2) extra="--attn-softcap 50 --final-softcap 30 --swa 4096" ;;
    gemma3) extra="--final-softcap 30 --swa 4096 --swa-pattern 6" ;;
    *) extra="" ;;
    esac
    log "writing $f"
    # shellcheck disable=SC2086
    "$hearth" synth -o "$f" --arch "$a" $shape $extra >/dev/null || die "hearth synth --arch $a failed"
done

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for t in ${threads//,/ }; do
    order=${archs//,/ }
    for r in $(seq "$rounds"); do
        log "threads $t, round $r/$rounds"
        for a in $order; do
            out=$("$hearth" bench -m "$(model "$a")" -t "$t" -p "$prompt" -n "$gen" -r 1 --json 2>/dev/null) ||
                die "hearth bench failed on $(model "$a")"
            echo "$t $r $a $(jnum <(echo "$out") decode_tok_s)" >>"$raw"
        done
        order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Decode tok/s, \`hearth bench -p $prompt -n $gen -r 1\`, $rounds interleaved rounds, medians; load average $load0 at the start, $load1 at the end."
echo
echo "| threads | arch | decode tok/s | ratio of medians | median of per-round ratios | min-max tok/s |"
echo "|---|---|---|---|---|---|"
for t in ${threads//,/ }; do
    base=$(awk -v t="$t" '$1 == t && $3 == "llama" { print $4 }' "$raw" | median)
    for a in ${archs//,/ }; do
        v=$(awk -v t="$t" -v a="$a" '$1 == t && $3 == a { print $4 }' "$raw")
        med=$(echo "$v" | median)
        per=$(awk -v t="$t" -v a="$a" '$1 == t && $3 == "llama" { l[$2] = $4 } $1 == t && $3 == a { x[$2] = $4 }
              END { for (r in x) if (l[r] > 0) print x[r] / l[r] }' "$raw" | median)
        lo=$(echo "$v" | sort -g | head -n 1) hi=$(echo "$v" | sort -g | tail -n 1)
        echo "| $t | $a | $(fmt "$med") | $(ratio "$med" "$base") | $(fmt "$per" 2) | $(fmt "$lo" 0)-$(fmt "$hi" 0) |"
    done
done
