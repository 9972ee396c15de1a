#!/usr/bin/env bash
# Mixture-of-experts decode and prompt speed of Hearth next to llama.cpp on two synthetic models
# shaped like real ones, scaled to fit this machine (both too large for the caches):
#   qwen3moe   like Qwen3-30B-A3B: n_embd 2048, 32 heads / 4 KV heads of 128, 128 experts of 768,
#              top-8, softmax router (the real model: 48 layers, vocab 151936; here --layers, vocab 32000)
#   smallthinker  like SmallThinker-4B-A0.6B: n_embd 1536, 12 heads / 2 KV heads of 128, 32 ReGLU
#              experts of 768, top-4, softmax router (the shape as recalled from the model's
#              config.json: 32 layers, vocab 151936; here 8 layers, vocab 32000; not verified here)
#   smallthinker-lr  the same shape with each expert's gate of rank 16 (hearth synth
#              --expert-gate-rank 16): random full-rank gates fire unpredictably, trained ones do not,
#              so this is the model on which expert predictors can be trained (still ~50% firing)
# Each is written in F16 by hearth synth, then quantized to Q4_K_M by llama.cpp's own quantizer
# (the llama-quantize-ref tool built with the tests). Hearth (dense experts; SmallThinker also
# --ffn exact: only the neurons whose gate fires, and exact-t: --ffn exact on the file hearth
# calibrate writes with the experts' down matrices transposed, so down rows too are read only
# for those neurons; smallthinker-lr also predicted: --ffn predicted on that file, where calibrate
# trained a predictor per expert, so the gate too is read only for the predicted neurons) and
# llama.cpp run the same files at 1 and 2
# threads, interleaved round by round (order alternating); medians over all runs. The memory
# read bandwidth is measured by the same script (bench/membw) so each Hearth figure is also a
# share of what the memory can deliver; bytes/token counts the expert rows the routing really
# read while decoding (hearth bench --json: moe_expert_bytes_per_token), plus routers,
# attention, embedding and output rows and the K/V cache.
# Prints one Markdown table on stdout; progress goes to stderr.
#
# usage: bench/moe.sh [--quick] [--models qwen3moe,smallthinker[,smallthinker-lr]] [--threads 1,2] [--rounds 3]
#                     [--runs 3] [--prompt 64] [--gen 64] [--layers N] [--type Q4_K_M] [--no-llama]
#                     [--llama-cpu VARIANT]
#                     [--hearth BIN] [--membw BIN] [--quantize BIN] [--dir CACHE]
#   --layers     layers of the models (default: qwen3moe 4, smallthinker and smallthinker-lr 8)
#   --type       a llama.cpp mix (Q4_K_M, Q5_K_M, Q6_K, Q8_0, ...) or f16 (the synth itself)
#   --quick      1 round of 2 runs, 32 decoded tokens
#   --no-llama   Hearth only (also the fallback when node-llama-cpp cannot be installed)
#   --llama-cpu  llama.cpp runs only this CPU build of ggml (zen4, icelake, haswell, ...; default:
#                the best one the CPU runs, which with AMX is sapphirerapids, a server-only build)
#   CACHE        generated models and the membw binary; default $HEARTH_BENCH_DIR or build-bench/
# Not a ctest: it takes minutes and its numbers depend on what else the machine is doing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
models=qwen3moe,smallthinker threads=1,2 rounds=3 runs=3 n_prompt=64 n_gen=64 layers= qtype=Q4_K_M llama=1 llama_cpu=
hearth=${HEARTH_BIN:-} membw= quantize= cache=${HEARTH_BENCH_DIR:-$root/build-bench}

me=moe.sh
. "$root/bench/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
    --quick) rounds=1 runs=2 n_gen=32 ;;
    --models) need "$@"; models=$2; shift ;;
    --threads) need "$@"; threads=$2; shift ;;
    --rounds) need "$@"; posint "$1" "$2"; rounds=$2; shift ;;
    --runs) need "$@"; posint "$1" "$2"; runs=$2; shift ;;
    --prompt) need "$@"; posint "$1" "$2"; n_prompt=$2; shift ;;
    --gen) need "$@"; posint "$1" "$2"; n_gen=$2; shift ;;
    --layers) need "$@"; posint "$1" "$2"; layers=$2; shift ;;
    --type) need "$@"; qtype=$2; shift ;;
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
IFS=, read -r -a model_list <<<"$models"
IFS=, read -r -a thread_list <<<"$threads"
for m in "${model_list[@]}"; do [[ $m =~ ^(qwen3moe|smallthinker|smallthinker-lr)$ ]] || die "--models: unknown model '$m'"; done
for t in "${thread_list[@]}"; do posint --threads "$t"; done
[[ $qtype =~ ^(f16|Q4_K_M|Q4_K_S|Q5_K_M|Q5_K_S|Q6_K|Q8_0|Q3_K_M|Q2_K|IQ4_XS|Q4_0|Q4_1)$ ]] || die "--type: unknown type '$qtype'"
mkdir -p "$cache" || die "cannot create $cache"

# --- tools (bench/lib.sh) ------------------------------------------------------------------
bench_find_tools
if [ "$qtype" != f16 ] && [ -z "$quantize" ]; then
    for c in "$root"/build/tests/llama-quantize-ref $(ls -t "$root"/build*/tests/llama-quantize-ref 2>/dev/null); do
        [ -x "$c" ] && { quantize=$c; break; }
    done
fi
if [ "$qtype" != f16 ] && { [ -z "$quantize" ] || [ ! -x "$quantize" ]; }; then
    die "$qtype needs llama.cpp's quantizer: build the tests (llama-quantize-ref) or pass --quantize BIN"
fi
bench_find_llama


# --- models --------------------------------------------------------------------------------
n_layers() { if [ -n "$layers" ]; then echo "$layers"; elif [ "$1" = qwen3moe ]; then echo 4; else echo 8; fi; }
shape() {
    local l; l=$(n_layers "$1")
    case $1 in
    qwen3moe) echo "--arch qwen3moe --n-embd 2048 --n-layer $l --n-head 32 --n-head-kv 4 --head-dim 128 --n-ff 768" \
                   "--n-expert 128 --n-expert-used 8 --n-vocab 32000" ;;
    smallthinker*) echo "--arch smallthinker --n-embd 1536 --n-layer $l --n-head 12 --n-head-kv 2 --head-dim 128 --n-ff 768" \
                        "--n-expert 32 --n-expert-used 4 --expert-gating softmax --n-vocab 32000" \
                        "$([ "$1" = smallthinker-lr ] && echo --expert-gate-rank 16)" ;;
    esac
}
describe() {
    case $1 in
    qwen3moe) echo "qwen3moe (Qwen3-30B-A3B-like): n_embd 2048, $(n_layers "$1") layers, 32/4 heads of 128, 128 experts of 768, top-8, vocab 32000" ;;
    smallthinker) echo "smallthinker (SmallThinker-4B-A0.6B-like): n_embd 1536, $(n_layers "$1") layers, 12/2 heads of 128, 32 ReGLU experts of 768, top-4, vocab 32000" ;;
    smallthinker-lr) echo "smallthinker-lr: smallthinker's shape, each expert's gate of rank 16 (predictable firing); calibrated on $calib_chars characters of the repository's docs" ;;
    esac
}
model_path() { echo "$cache/moe-$1-l$(n_layers "$1")-$2.gguf"; }
make_model() { # model: F16 synth (temporary name, so an interrupted run never leaves a truncated model), then the mix
    local f m; f=$(model_path "$1" f16) m=$(model_path "$1" "$qtype")
    [ -s "$m" ] && return 0
    if [ ! -s "$f" ]; then
        log "generating $f"
        # shellcheck disable=SC2046
        "$hearth" synth -q -o "$f.part" --type f16 $(shape "$1") --seed 1 >&2 && mv "$f.part" "$f" ||
            { rm -f "$f.part"; die "hearth synth failed for $1"; }
    fi
    [ -s "$m" ] && return 0
    log "quantizing $f to $qtype with llama.cpp's quantizer"
    HEARTH_SRC=$root "$quantize" -t 2 "$f" "$m.part" "$qtype" >"$cache/err" 2>&1 && mv "$m.part" "$m" ||
        { rm -f "$m.part"; die "llama-quantize-ref $qtype failed for $1: $(tail -n 2 "$cache/err")"; }
}
# ReLU-family experts: the same file with the experts' down matrices transposed (hearth calibrate
# over a short text: ffn_down_exps_t, requantized to the same types), for the exact-t variant;
# smallthinker-lr over a longer one, so that each expert is routed often enough for a predictor
# (calibrate trains one per expert where it reads fewer bytes than exact; its log: CACHE/calib-*.log).
calib_chars=12000
sparse_path() { echo "$cache/moe-$1-l$(n_layers "$1")-$2.sparse.gguf"; }
make_sparse() {
    local m s; m=$(model_path "$1" "$qtype") s=$(sparse_path "$1" "$qtype")
    [ -s "$s" ] && return 0
    local n=4000; [ "$1" = smallthinker-lr ] && n=$calib_chars
    log "transposing the experts' down matrices of $m (hearth calibrate over $n characters)"
    cat "$root/README.md" "$root"/docs/*.md | head -c "$n" >"$cache/calib-$1.txt"
    "$hearth" calibrate -m "$m" -f "$cache/calib-$1.txt" -o "$s.part.gguf" -c 256 -t 2 -v >"$cache/calib-$1.log" 2>&1 &&
        mv "$s.part.gguf" "$s" && mv "$s.part.stats.gguf" "${s%.gguf}.stats.gguf" ||
        { rm -f "$s.part.gguf" "$s.part.stats.gguf"; die "hearth calibrate failed for $1: $(tail -n 2 "$cache/calib-$1.log")"; }
}
for m in "${model_list[@]}"; do make_model "$m"; done
for m in "${model_list[@]}"; do [[ $m = smallthinker* ]] && make_sparse "$m"; done

# --- memory bandwidth ------------------------------------------------------------------------
log "measuring memory read bandwidth ($membw --threads $threads)"
"$membw" --json --threads "$threads" >"$cache/membw.json" || die "membw failed"
bw() { grep -o '"gb_s":{[^}]*}' "$cache/membw.json" | grep -o "\"$1\":[0-9.eE+-]*" | cut -d: -f2; }

# --- interleaved runs ----------------------------------------------------------------------
# Hearth variants: "dense" for every model; "exact" (--ffn exact) for ReLU-family experts, and
# "exact-t" (--ffn exact on the transposed-down file: down rows only for the firing neurons);
# "predicted" (--ffn predicted on that file: the gate too only for the predicted neurons).
variants() {
    case $1 in
    smallthinker) echo "dense exact exact-t" ;;
    smallthinker-lr) echo "dense exact-t predicted" ;;
    *) echo dense ;;
    esac
}
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
declare -A hp hd lp ld bpt ebt frac
out=$cache/out.json
run_hearth() { # model variant threads
    local k=$1,$2,$3 file ffn=$2
    file=$(model_path "$1" "$qtype")
    if [ "$2" = exact-t ]; then file=$(sparse_path "$1" "$qtype") ffn=exact; fi
    if [ "$2" = predicted ]; then file=$(sparse_path "$1" "$qtype"); fi
    if "$hearth" bench -m "$file" -t "$3" -p "$n_prompt" -n "$n_gen" -r "$runs" --ffn "$ffn" --json \
        >"$out" 2>"$cache/err"; then
        hp[$k]+="$(jnum "$out" prompt_tok_s) "
        hd[$k]+="$(jnum "$out" decode_tok_s) "
        bpt[$k]=$(jnum "$out" bytes_per_token) ebt[$k]=$(jnum "$out" moe_expert_bytes_per_token)
        frac[$k]=$(jnum "$out" computed_fraction) kernels=$(jstr "$out" cpu_kernels)
    else
        log "hearth bench failed ($1 $2, $3 threads): $(tail -n 1 "$cache/err")"
    fi
}
run_llama() { # model threads
    if node "$llama_ref" bench --model "$(model_path "$1" "$qtype")" --threads "$2" --prompt-tokens "$n_prompt" -n "$n_gen" \
        --runs "$runs" >"$out" 2>"$cache/err"; then
        lp[$1,$2]+="$(jnum "$out" prompt_tps) "
        ld[$1,$2]+="$(jnum "$out" decode_tps) "
    else
        log "llama.cpp bench failed ($1, $2 threads): $(tail -n 1 "$cache/err")"
    fi
}
for ((r = 1; r <= rounds; r++)); do
    for m in "${model_list[@]}"; do
        for n in "${thread_list[@]}"; do
            log "round $r/$rounds: $m, $n thread(s)"
            if [ "$llama" = 1 ] && [ $((r % 2)) = 0 ]; then run_llama "$m" "$n"; fi
            for v in $(variants "$m"); do run_hearth "$m" "$v" "$n"; done
            if [ "$llama" = 1 ] && [ $((r % 2)) = 1 ]; then run_llama "$m" "$n"; fi
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# --- report --------------------------------------------------------------------------------
echo "## Mixture-of-experts benchmark: Hearth vs llama.cpp ($qtype by llama.cpp's quantizer)"
echo
for m in "${model_list[@]}"; do echo "- $(describe "$m")"; done
echo
echo "Prompt $n_prompt tokens, $n_gen decoded; $rounds interleaved round(s) x $runs run(s), medians of the per-round medians."
echo "Hearth $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') ($hearth, CPU kernels ${kernels:-?});" \
     "llama.cpp: $([ "$llama" = 1 ] && echo "node-llama-cpp 3.22.1 (its own timing counters)${llama_cpu:+, its ${llama_cpu} CPU build only}" || echo "not run")."
echo "Memory read bandwidth (membw, $(grep -o '"isa":"[a-z0-9]*"' "$cache/membw.json" | cut -d'"' -f4), best of 7):" \
     "$(for n in "${thread_list[@]}"; do printf '%s GB/s at %s thread(s). ' "$(fmt "$(bw "$n")")" "$n"; done)"
echo "Load average at start: $load_start; at end: $load_end."
echo "bytes/token = the expert rows one decoded token's routing read (exact: the gate and down of each chosen" \
     "expert, up rows only for the neurons whose gate fired; exact-t: down rows too only for them; predicted: each chosen expert's predictor," \
     "the gate rows of its predicted neurons, up and down rows of those that fired) + routers + attention, embedding and output rows +" \
     "K/V cache at the mean decode position (F16 KV). The llama.cpp columns repeat per Hearth variant."
echo
echo "| model | Hearth FFN | threads | prompt tok/s Hearth | llama.cpp | ratio | decode tok/s Hearth | llama.cpp | ratio | expert neurons computed | expert MB/token | bytes/token | Hearth GB/s | share of membw |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for m in "${model_list[@]}"; do
    for v in $(variants "$m"); do
        for n in "${thread_list[@]}"; do
            k=$m,$v,$n
            php=$(median <<<"${hp[$k]:-}") phd=$(median <<<"${hd[$k]:-}")
            plp=$(median <<<"${lp[$m,$n]:-}") pld=$(median <<<"${ld[$m,$n]:-}")
            b=${bpt[$k]:-} eb=${ebt[$k]:-}
            gbs=$(awk -v d="$phd" -v b="$b" 'BEGIN { if (d == "" || b == "") print ""; else print d * b / 1e9 }')
            share=$(awk -v g="$gbs" -v w="$(bw "$n")" 'BEGIN { if (g == "" || w == "" || w + 0 == 0) print "-"; else printf "%.0f%%", 100 * g / w }')
            mb=$(awk -v b="$b" 'BEGIN { if (b == "") print "-"; else printf "%.0f MB", b / 1e6 }')
            emb=$(awk -v b="$eb" 'BEGIN { if (b == "") print "-"; else printf "%.1f", b / 1e6 }')
            fr=$(awk -v f="${frac[$k]:-}" 'BEGIN { if (f == "") print "-"; else printf "%.1f%%", 100 * f }')
            echo "| $m | $v | $n | $(fmt "$php") | $(fmt "$plp") | $(ratio "$php" "$plp") | $(fmt "$phd") | $(fmt "$pld") |" \
                 "$(ratio "$phd" "$pld") | $fr | $emb | $mb | $(fmt "$gbs" 2) | $share |"
        done
    done
done
