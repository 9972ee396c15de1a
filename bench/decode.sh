#!/usr/bin/env bash
# Decode and prompt speed of Hearth next to llama.cpp on synthetic models too large for the
# caches (shape of the reference baseline figures for llama.cpp: n_embd 2048, 8 layers, 16 heads, n_ff
# 5632, vocab 32000), in F16, Q8_0 and Q4_0 (written by hearth synth) and in llama.cpp's mixes
# Q4_K_M, Q5_K_M, Q6_K, IQ4_XS, Q4_1 ... (made from the F16 model by llama.cpp's own quantizer,
# the llama-quantize-ref tool built with the tests), at 1 and 2 threads. Both engines run in the same
# session, interleaved round by round (order alternating), and the medians over all runs are
# compared; the memory read bandwidth is measured by the same script (bench/membw) so each
# Hearth figure is also given as a share of what the memory can deliver.
# Prints one Markdown table on stdout; progress goes to stderr.
#
# usage: bench/decode.sh [--quick] [--types f16,q8_0,q4_0] [--threads 1,2] [--rounds 3]
#                        [--runs 3] [--prompt 64] [--gen 64] [--layers 8] [--no-llama]
#                        [--llama-cpu VARIANT]
#                        [--hearth BIN] [--membw BIN] [--quantize BIN] [--dir CACHE]
#   --types      f32, f16, bf16, q8_0, q4_0 (hearth synth), or a llama.cpp mix: Q4_K_M, Q4_K_S,
#                Q5_K_M, Q5_K_S, Q6_K, Q3_K_M, Q2_K, IQ4_XS, IQ4_NL, Q4_1, Q5_0, Q5_1
#                (default f16,q8_0,q4_0,Q4_K_M,Q5_K_M,Q6_K,IQ4_XS,Q4_1)
#   --quantize   the llama-quantize-ref tool (default: build*/tests/llama-quantize-ref)
#   --quick      q8_0 and q4_0 only, 1 round of 2 runs (a few minutes)
#   --rounds R   interleaved rounds; each round runs each engine once with --runs runs
#   --no-llama   Hearth only (also the fallback when node-llama-cpp cannot be installed)
#   --llama-cpu  llama.cpp runs only this CPU build of ggml (zen4, icelake, haswell, ...; default:
#                the best one the CPU runs, which with AMX is sapphirerapids, a server-only build)
#   CACHE        generated models and the membw binary; default $HEARTH_BENCH_DIR or build-bench/
# Not a ctest: it takes minutes and its numbers depend on what else the machine is doing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
types=f16,q8_0,q4_0,Q4_K_M,Q5_K_M,Q6_K,IQ4_XS,Q4_1 threads=1,2 rounds=3 runs=3 n_prompt=64 n_gen=64 layers=8 llama=1 llama_cpu=
hearth=${HEARTH_BIN:-} membw= quantize= cache=${HEARTH_BENCH_DIR:-$root/build-bench}

me=decode.sh
. "$root/bench/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
    --quick) types=q8_0,q4_0 rounds=1 runs=2 ;;
    --types) need "$@"; types=$2; shift ;;
    --threads) need "$@"; threads=$2; shift ;;
    --rounds) need "$@"; posint "$1" "$2"; rounds=$2; shift ;;
    --runs) need "$@"; posint "$1" "$2"; runs=$2; shift ;;
    --prompt) need "$@"; posint "$1" "$2"; n_prompt=$2; shift ;;
    --gen) need "$@"; posint "$1" "$2"; n_gen=$2; shift ;;
    --layers) need "$@"; posint "$1" "$2"; layers=$2; shift ;;
    --no-llama) llama=0 ;;
    --llama-cpu) need "$@"; llama_cpu=$2; shift ;;
    --hearth) need "$@"; hearth=$2; shift ;;
    --membw) need "$@"; membw=$2; shift ;;
    --quantize) need "$@"; quantize=$2; shift ;;
    --dir) need "$@"; cache=$2; shift ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown flag '$1' (try --help)" ;;
    esac
    shift
done
IFS=, read -r -a type_list <<<"$types"
IFS=, read -r -a thread_list <<<"$threads"
synth_type() { [[ $1 =~ ^(f16|q8_0|q4_0|f32|bf16)$ ]]; }
mix_type() { [[ $1 =~ ^(Q4_K_M|Q4_K_S|Q5_K_M|Q5_K_S|Q6_K|Q3_K_M|Q3_K_S|Q3_K_L|Q2_K|IQ4_XS|IQ4_NL|Q4_1|Q5_0|Q5_1)$ ]]; }
for t in "${type_list[@]}"; do synth_type "$t" || mix_type "$t" || die "--types: unknown type '$t'"; done
for t in "${thread_list[@]}"; do posint --threads "$t"; done
mkdir -p "$cache" || die "cannot create $cache"

# --- tools ---------------------------------------------------------------------------------
bench_find_tools
bench_find_llama


# --- models --------------------------------------------------------------------------------
shape="--n-embd 2048 --n-layer $layers --n-head 16 --n-ff 5632 --n-vocab 32000"
model_path() { echo "$cache/synth-$1-e2048-l$layers-h16-ff5632-v32000.gguf"; }
make_synth() { # type: written under a temporary name, so an interrupted run never leaves a truncated model
    local m; m=$(model_path "$1")
    [ -s "$m" ] && return 0
    log "generating $m"
    "$hearth" synth -q -o "$m.part" --type "$1" $shape --seed 1 >&2 && mv "$m.part" "$m" ||
        { rm -f "$m.part"; die "hearth synth failed for $1"; }
}
make_mix() { # mix: llama.cpp's quantizer on the F16 model
    local m; m=$(model_path "$1")
    [ -s "$m" ] && return 0
    make_synth f16
    log "quantizing $(model_path f16) to $1 with llama.cpp's quantizer"
    HEARTH_SRC=$root "$quantize" -t 2 "$(model_path f16)" "$m.part" "$1" >"$cache/err" 2>&1 && mv "$m.part" "$m" ||
        { rm -f "$m.part"; die "llama-quantize-ref $1 failed: $(tail -n 2 "$cache/err")"; }
}
for t in "${type_list[@]}"; do
    if synth_type "$t"; then make_synth "$t"; continue; fi
    if [ -z "$quantize" ]; then
        for c in "$root"/build/tests/llama-quantize-ref $(ls -t "$root"/build*/tests/llama-quantize-ref 2>/dev/null); do
            [ -x "$c" ] && { quantize=$c; break; }
        done
    fi
    [ -n "$quantize" ] && [ -x "$quantize" ] || die "$t needs llama.cpp's quantizer: build the tests (llama-quantize-ref) or pass --quantize BIN"
    make_mix "$t"
done

# --- memory bandwidth ------------------------------------------------------------------------
log "measuring memory read bandwidth ($membw --threads $threads)"
"$membw" --json --threads "$threads" >"$cache/membw.json" || die "membw failed"
bw() { grep -o '"gb_s":{[^}]*}' "$cache/membw.json" | grep -o "\"$1\":[0-9.eE+-]*" | cut -d: -f2; }

# --- interleaved runs ----------------------------------------------------------------------
# Round 1 runs Hearth first, so it reads each file afresh (bench_evict in bench/lib.sh).
for t in "${type_list[@]}"; do bench_evict "$(model_path "$t")"; done
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
declare -A hp hd lp ld bpt huge
kernels="?"
out=$cache/out.json
run_hearth() { # type threads
    if "$hearth" bench -m "$(model_path "$1")" -t "$2" -p "$n_prompt" -n "$n_gen" -r "$runs" --json >"$out" 2>"$cache/err"; then
        hp[$1,$2]+="$(jnum "$out" prompt_tok_s) "
        hd[$1,$2]+="$(jnum "$out" decode_tok_s) "
        bpt[$1,$2]=$(jnum "$out" bytes_per_token)
        kernels=$(jstr "$out" cpu_kernels)
        huge[$1]=$(awk -v h="$(jnum "$out" huge_page_bytes)" -v f="$(jnum "$out" file_bytes)" \
            'BEGIN { if (h == "" || h < 0 || f + 0 == 0) print "?"; else printf "%.0f%%", 100 * h / f }')
    else
        log "hearth bench failed ($1, $2 threads): $(tail -n 1 "$cache/err")"
    fi
}
run_llama() {
    if node "$llama_ref" bench --model "$(model_path "$1")" --threads "$2" --prompt-tokens "$n_prompt" -n "$n_gen" \
        --runs "$runs" >"$out" 2>"$cache/err"; then
        lp[$1,$2]+="$(jnum "$out" prompt_tps) "
        ld[$1,$2]+="$(jnum "$out" decode_tps) "
    else
        log "llama.cpp bench failed ($1, $2 threads): $(tail -n 1 "$cache/err")"
    fi
}
for ((r = 1; r <= rounds; r++)); do
    for t in "${type_list[@]}"; do
        for n in "${thread_list[@]}"; do
            log "round $r/$rounds: $t, $n thread(s)"
            if [ "$llama" = 1 ] && [ $((r % 2)) = 0 ]; then run_llama "$t" "$n"; fi
            run_hearth "$t" "$n"
            if [ "$llama" = 1 ] && [ $((r % 2)) = 1 ]; then run_llama "$t" "$n"; fi
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# --- report --------------------------------------------------------------------------------
echo "## Decode benchmark: Hearth vs llama.cpp"
echo
echo "Synthetic llama model: n_embd 2048, n_layer $layers, 16 heads, n_ff 5632, vocab 32000; prompt $n_prompt" \
     "tokens, $n_gen decoded; $rounds interleaved round(s) x $runs run(s), medians of the per-round medians."
echo "Hearth $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') ($hearth, CPU kernels $kernels);" \
     "llama.cpp: $([ "$llama" = 1 ] && echo "node-llama-cpp 3.22.1 (its own timing counters)${llama_cpu:+, its ${llama_cpu} CPU build only}" || echo "not run")."
echo "Memory read bandwidth (membw, $(grep -o '"isa":"[a-z0-9]*"' "$cache/membw.json" | cut -d'"' -f4), best of 7):" \
     "$(for n in "${thread_list[@]}"; do printf '%s GB/s at %s thread(s). ' "$(fmt "$(bw "$n")")" "$n"; done)"
echo "Load average at start: $load_start; at end: $load_end."
echo "bytes/token = weights one decoded token reads + K/V cache read at the mean decode position (F16 KV)."
echo
echo "| type | threads | prompt tok/s Hearth | llama.cpp | ratio | decode tok/s Hearth | llama.cpp | ratio | bytes/token | Hearth GB/s | share of membw |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for t in "${type_list[@]}"; do
    for n in "${thread_list[@]}"; do
        php=$(median <<<"${hp[$t,$n]:-}") phd=$(median <<<"${hd[$t,$n]:-}")
        plp=$(median <<<"${lp[$t,$n]:-}") pld=$(median <<<"${ld[$t,$n]:-}")
        b=${bpt[$t,$n]:-}
        gbs=$(awk -v d="$phd" -v b="$b" 'BEGIN { if (d == "" || b == "") print ""; else print d * b / 1e9 }')
        share=$(awk -v g="$gbs" -v m="$(bw "$n")" 'BEGIN { if (g == "" || m == "" || m + 0 == 0) print "-"; else printf "%.0f%%", 100 * g / m }')
        mb=$(awk -v b="$b" 'BEGIN { if (b == "") print "-"; else printf "%.0f MB", b / 1e6 }')
        echo "| $t | $n | $(fmt "$php") | $(fmt "$plp") | $(ratio "$php" "$plp") | $(fmt "$phd") | $(fmt "$pld") |" \
             "$(ratio "$phd" "$pld") | $mb | $(fmt "$gbs" 2) | $share |"
    done
done
echo
echo "Hearth's file in 2 MiB pages (last run): $(for t in "${type_list[@]}"; do printf '%s %s; ' "$t" "${huge[$t]:-?}"; done)"
# A file short of its 2 MiB pages decodes slower (the VM's free 2 MiB blocks run out when many
# files are mapped; docs/performance.md, "2 MiB pages"): say so next to the table, not only here.
short=$(for t in "${type_list[@]}"; do p=${huge[$t]:-?}; p=${p%\%}; [[ $p =~ ^[0-9]+$ ]] && ((p < 80)) && printf '%s (%s%%) ' "$t" "$p"; done; true)
if [[ -n $short ]]; then
    echo
    echo "**Warning:** under 80% of the file in 2 MiB pages for $short- their Hearth figures are low;" \
         "rerun those types alone (\`--types\`) or free memory first."
    log "warning: under 80% in 2 MiB pages: $short"
fi
