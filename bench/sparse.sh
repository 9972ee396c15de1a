#!/usr/bin/env bash
# Sparse decode benchmark: Hearth's predicted FFN mode on a 7B-shaped synthetic PowerInfer file
# (n_embd 4096, n_ff 11008, 32 layers, 32 heads, vocab 32000, Q4_0, ReGLU, predictor rank 512)
# at about 10%, 25% and 50% active neurons, against Hearth dense (the same file with --ffn dense,
# and its dense twin: same seed, smallthinker with one expert, the same weights in a file
# llama.cpp loads) and llama.cpp on the twin. Thresholds for the target sparsities are found
# first by a bracketed search on short `hearth bench` runs (the predictor's random scores are
# near-symmetric, so the fraction is a smooth decreasing function of the threshold); the table
# reports the fraction measured during the timed decodes, not the target.
# All configurations run interleaved round by round (order reversed every other round) and
# medians over the rounds are reported, with membw's read bandwidth as the ceiling.
# Predictor share of decode time: time per token with threshold +1e30 (no neuron computed:
# attention + predictor + mask bookkeeping) minus time per token of an attention-only twin
# (same shape, n_ff 32), over the time per token of the row. FFN GB/s on the rows read: FFN
# bytes the token reads over (its time - the time without FFN: the +1e30 run for predicted
# rows, the attention-only model for dense rows).
# Prints one Markdown table on stdout; progress goes to stderr.
#
# usage: bench/sparse.sh [--quick] [--layers N] [--threads 1,2] [--runs R] [--gen N]
#                        [--prompt N] [--fractions 0.10,0.25,0.50] [--thresholds T1,T2,..]
#                        [--no-llama] [--powerinfer PATH [--pi-types q4_0,f16] [--pi-f16-layers N]
#                        [--pi-only] [--pi-f16-thresholds T1,..] [--pi-prompt TEXT]]
#                        [--hearth BIN] [--membw BIN] [--dir CACHE]
#   --quick      1 round, 16 decoded tokens, threads 1 only (llama.cpp included)
#   --layers N   layers of the models (default 32, fewer when RAM or disk cannot hold the
#                three files; the choice is printed)
#   --runs R     interleaved rounds (default 3); each call decodes --gen tokens (default 32)
#   --thresholds skip the search and use these (one per fraction, e.g. from an earlier run)
#   CACHE        generated models; default $HEARTH_BENCH_DIR or build-bench/
#   --powerinfer PATH  PowerInfer's CPU `main` (the binary, or the CMake build folder holding
#                bin/main; built outside this repository, docs/performance.md says how): adds
#                a second table, PowerInfer main against `hearth run` on the same PowerInfer
#                files (Q4_0: the file above; F16: the same shape and seed in F16, with
#                --pi-f16-layers layers, default min(8, --layers)), the same prompt tokens,
#                --gen tokens, the same predictor threshold (LLAMA_SPARSE_PRED_THRESHOLD for
#                PowerInfer), CPU only, interleaved with the runs above; first an untimed run
#                of each that also compares their greedy tokens. Without it the table is
#                skipped (a line on stderr says so).
#   --pi-only    only that table: no dense twin, attention-only file, llama.cpp or first table
#                (the thresholds are still searched on the Q4_0 file unless given)
#   --pi-f16-thresholds  the F16 file's thresholds (one per fraction); searched on it otherwise
#                (its predictor is not the Q4_0 file's: the same threshold gives another share)
#   --pi-prompt TEXT  the side by side's prompt (default one short sentence, ~10 tokens): a long
#                one makes its prompt tok/s columns a prompt-processing comparison
#   --swiglu     (first flag) the SwiGLU section instead: FFN mode threshold at 25/40/50%
#                sparsity on a 7B-shaped SwiGLU file, Q4_0 and Q4_K_M (bench/sparse-swiglu.sh;
#                the other flags are its own: bench/sparse.sh --swiglu --help)
# Not a ctest: it takes many minutes and its numbers depend on what else the machine is doing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
threads=1,2 rounds=3 n_gen=32 n_prompt=8 layers= llama=1 fractions=0.10,0.25,0.50 thresholds=
pi_prompt="The history of the city begins with a market"
hearth=${HEARTH_BIN:-} membw= cache=${HEARTH_BENCH_DIR:-$root/build-bench}
pinf= pi_types=q4_0,f16 pi_f16_layers= pi_only=0 pi_f16_thresholds=
E=4096 FF=11008 HEADS=32 VOCAB=32000 RANK=512 SEED=1
[ "${1:-}" = --swiglu ] && { shift; exec bash "$root/bench/sparse-swiglu.sh" "$@"; }

me=sparse.sh
. "$root/bench/lib.sh" # die, log, need, posint, bench_evict, jnum, median, fmt

while [ $# -gt 0 ]; do
    case $1 in
    --quick) rounds=1 n_gen=16 threads=1 ;;
    --layers) need "$@"; posint "$1" "$2"; layers=$2; shift ;;
    --threads) need "$@"; threads=$2; shift ;;
    --runs) need "$@"; posint "$1" "$2"; rounds=$2; shift ;;
    --gen) need "$@"; posint "$1" "$2"; n_gen=$2; shift ;;
    --prompt) need "$@"; posint "$1" "$2"; n_prompt=$2; shift ;;
    --fractions) need "$@"; fractions=$2; shift ;;
    --thresholds) need "$@"; thresholds=$2; shift ;;
    --no-llama) llama=0 ;;
    --powerinfer) need "$@"; pinf=$2; shift ;;
    --pi-types) need "$@"; pi_types=$2; shift ;;
    --pi-f16-layers) need "$@"; posint "$1" "$2"; pi_f16_layers=$2; shift ;;
    --pi-only) pi_only=1 llama=0 ;;
    --pi-f16-thresholds) need "$@"; pi_f16_thresholds=$2; shift ;;
    --pi-prompt) need "$@"; [ -n "$2" ] || die "--pi-prompt: the text is empty"; pi_prompt=$2; shift ;;
    --hearth) need "$@"; hearth=$2; shift ;;
    --membw) need "$@"; membw=$2; shift ;;
    --dir) need "$@"; cache=$2; shift ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown flag '$1' (try --help)" ;;
    esac
    shift
done
IFS=, read -r -a thread_list <<<"$threads"
IFS=, read -r -a frac_list <<<"$fractions"
for t in "${thread_list[@]}"; do posint --threads "$t"; done
for f in "${frac_list[@]}"; do [[ $f =~ ^0?\.[0-9]+$ ]] || die "--fractions: '$f' is not in (0, 1)"; done
mkdir -p "$cache" && cache=$(cd "$cache" && pwd) || die "cannot create $cache" # absolute: PowerInfer runs in its own folder
max_t=$(printf '%s\n' "${thread_list[@]}" | sort -n | tail -n 1)

# --- tools ---------------------------------------------------------------------------------
if [ -z "$hearth" ]; then
    for c in "$root/build/hearth" $(ls -t "$root"/build*/hearth 2>/dev/null); do
        [ -x "$c" ] && "$c" bench --help 2>/dev/null | grep -q -- --ffn && { hearth=$c; break; }
    done
fi
[ -n "$hearth" ] && [ -x "$hearth" ] || die "no hearth binary with 'bench --ffn' (build it, or pass --hearth BIN)"
if [ -z "$membw" ]; then
    for c in "$root/build/bench/membw" "$cache/membw"; do [ -x "$c" ] && { membw=$c; break; }; done
fi
if [ -z "$membw" ]; then
    membw=$cache/membw
    log "compiling bench/membw.c -> $membw"
    ${CC:-cc} -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -pthread -o "$membw" "$root/bench/membw.c" ||
        die "cannot compile bench/membw.c"
fi
# PowerInfer: its CPU `main`, from a checkout outside this repository (nothing of it is committed)
IFS=, read -r -a pi_type_list <<<"$pi_types"
for ty in "${pi_type_list[@]}"; do [[ $ty =~ ^(q4_0|f16)$ ]] || die "--pi-types: '$ty' is not q4_0 or f16"; done
if [ -n "$pinf" ]; then
    for c in "$pinf" "$pinf/bin/main" "$pinf/main"; do [ -f "$c" ] && [ -x "$c" ] && { pinf=$(cd "$(dirname "$c")" && pwd)/$(basename "$c"); break; }; done
    [ -f "$pinf" ] && [ -x "$pinf" ] || die "--powerinfer: no PowerInfer main at '$pinf' (nor bin/main under it)"
else
    [ "$pi_only" = 1 ] && die "--pi-only needs --powerinfer PATH"
    log "PowerInfer column skipped: no --powerinfer PATH given (PowerInfer is not part of this repository; docs/performance.md says how to build its CPU main)"
fi
llama_ref=$root/tests/conformance/llama_ref.mjs
if [ "$llama" = 1 ]; then
    if ! command -v node >/dev/null 2>&1 || [ ! -f "$llama_ref" ]; then
        log "node or tests/conformance/llama_ref.mjs missing: Hearth only"; llama=0
    elif ! sh "$root/scripts/llama-ref-setup.sh" >&2; then
        log "node-llama-cpp could not be installed: Hearth only"; llama=0
    fi
fi

# --- helpers (the rest are bench/lib.sh's) ---------------------------------------------------
calc() { awk "BEGIN { $1 }" </dev/null; }   # calc 'print ...' with -v-free literals only

# --- sizes, and the number of layers RAM and disk allow --------------------------------------
# Q4_0: 18 bytes per 32 weights. Per layer: attention 4 E^2; FFN 3 E FF; predictor E R + R FF.
per_attn=$((4 * E * E * 18 / 32)) per_ffn=$((3 * E * FF * 18 / 32)) per_pred=$(((E * RANK + RANK * FF) * 18 / 32))
emb=$((2 * VOCAB * E * 18 / 32))
per_layer_all=$((2 * per_attn + 2 * per_ffn + per_pred + per_attn)) # PowerInfer + twin + attention-only
need_bytes() { echo $(($1 * per_layer_all + 3 * emb)); }
avail_ram=$(($(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo) * 1024))
avail_disk=$(($(df -Pk "$cache" | awk 'NR == 2 { print $4 }') * 1024))
reserve=$((3 * 1024 * 1024 * 1024)) # left for the engines, the other users, and the OS
fit=32
while [ "$fit" -gt 1 ] && [ "$(need_bytes "$fit")" -gt $((avail_ram - reserve)) ]; do fit=$((fit - 1)); done
if [ -z "$layers" ]; then
    layers=$fit
    [ "$layers" -lt 32 ] && log "RAM available $((avail_ram >> 20)) MiB holds $layers layers of the three files, not 32: using $layers"
elif [ "$layers" -gt "$fit" ]; then
    log "warning: --layers $layers: the three files ($(($(need_bytes "$layers") >> 20)) MiB) exceed available RAM - 3 GiB; page cache will thrash"
fi
log "layers $layers: files need $(($(need_bytes "$layers") >> 20)) MiB; RAM available $((avail_ram >> 20)) MiB, disk $((avail_disk >> 20)) MiB"

# --- models --------------------------------------------------------------------------------
shape="--type q4_0 --n-embd $E --n-layer $layers --n-head $HEADS --n-vocab $VOCAB --seed $SEED"
tag=q4_0-e$E-l$layers-h$HEADS-ff$FF-v$VOCAB
pi=$cache/sparse-pi-$tag-r$RANK.gguf
twin=$cache/sparse-twin-$tag.gguf
attn=$cache/sparse-attn-q4_0-e$E-l$layers-h$HEADS-ff32-v$VOCAB.gguf
make_model() { # file synth-flags...
    local f=$1
    shift
    [ -s "$f" ] && return 0
    local free=$(($(df -Pk "$cache" | awk 'NR == 2 { print $4 }') * 1024))
    [ "$free" -gt $((layers * (per_attn + per_ffn + per_pred) + emb + (1 << 30))) ] || die "not enough disk in $cache for $f"
    log "generating $f"
    # written under a temporary name, so an interrupted run never leaves a truncated model
    "$hearth" synth -q -o "$f.part" "$@" >&2 && mv "$f.part" "$f" || { rm -f "$f.part"; die "hearth synth failed: $f"; }
}
make_model "$pi" $shape --n-ff $FF --arch llama --act reglu --powerinfer --pred-rank $RANK
[ "$pi_only" = 1 ] || make_model "$twin" $shape --n-ff $FF --arch smallthinker --act reglu
[ "$pi_only" = 1 ] || make_model "$attn" $shape --n-ff 32 --arch llama --act reglu
# The side-by-side's files: Q4_0 is the file above; F16 has the same shape and seed (so the same
# predictor up to rounding, and the same thresholds give about the same fractions), fewer layers
# by default, as 32 F16 layers (14 GB) and the files above do not fit this machine's page cache.
declare -A pi_file pi_layers
if [ -n "$pinf" ]; then
    [ -n "$pi_f16_layers" ] || pi_f16_layers=$((layers < 8 ? layers : 8))
    for ty in "${pi_type_list[@]}"; do
        if [ "$ty" = q4_0 ]; then pi_file[$ty]=$pi pi_layers[$ty]=$layers; continue; fi
        f16_bytes=$((pi_f16_layers * (per_attn + per_ffn + per_pred) * 32 / 9 + emb * 32 / 9))
        [ "$f16_bytes" -gt $((avail_ram - reserve - $(need_bytes "$layers"))) ] &&
            log "warning: the F16 file ($((f16_bytes >> 20)) MiB, $pi_f16_layers layers) and the files above exceed available RAM - 3 GiB"
        pi_file[$ty]=$cache/sparse-pi-f16-e$E-l$pi_f16_layers-h$HEADS-ff$FF-v$VOCAB-r$RANK.gguf pi_layers[$ty]=$pi_f16_layers
        free=$(($(df -Pk "$cache" | awk 'NR == 2 { print $4 }') * 1024))
        [ ! -s "${pi_file[$ty]}" ] && [ "$free" -lt $((f16_bytes + (1 << 30))) ] && die "not enough disk in $cache for ${pi_file[$ty]}"
        make_model "${pi_file[$ty]}" --type f16 --n-embd $E --n-layer "$pi_f16_layers" --n-head $HEADS --n-vocab $VOCAB \
            --seed $SEED --n-ff $FF --arch llama --act reglu --powerinfer --pred-rank $RANK
    done
fi

# Hearth reads them first (the threshold search below), afresh, in 2 MiB pages (bench/lib.sh).
bench_evict "$pi" "$twin" "$attn" "${pi_file[@]}"

# --- memory bandwidth ------------------------------------------------------------------------
log "measuring memory read bandwidth ($membw --threads $threads)"
"$membw" --json --threads "$threads" >"$cache/sparse-membw.json" || die "membw failed"
bw() { grep -o '"gb_s":{[^}]*}' "$cache/sparse-membw.json" | grep -o "\"$1\":[0-9.eE+-]*" | cut -d: -f2; }

# --- thresholds for the target fractions -----------------------------------------------------
# Bracketed search: f(t) decreases in t; new points interpolate logit(f) linearly between the
# bracket ends (the scores are near-Gaussian, so this converges in a few steps), with bisection
# when the interpolation leaves the bracket. Short runs: 1 prompt token, 16 decoded tokens.
out=$cache/sparse-out.json
seen=$cache/sparse-search.txt # "threshold fraction" lines of this run (callers run in subshells)
: >"$seen"
frac_at() {
    local t=$1 f
    f=$(awk -v t="$t" '$1 == t { print $2; exit }' "$seen")
    if [ -z "$f" ]; then
        "$hearth" bench -m "${search_model:-$pi}" -t "$max_t" -p 1 -n 16 -r 1 --json --sparse-threshold "$t" >"$out" 2>"$cache/err" ||
            die "hearth bench failed at threshold $t: $(tail -n 1 "$cache/err")"
        f=$(jnum "$out" computed_fraction)
        echo "$t $f" >>"$seen"
        log "  threshold $t -> $(fmt "$(calc "print 100 * $f")" 2)% active"
    fi
    echo "$f"
}
find_threshold() { # target fraction -> threshold
    local want=$1 lo=0 hi=0.5 flo fhi t f i
    flo=$(frac_at $lo)
    # f(0) is near 0.5 for symmetric scores; targets above it need negative thresholds
    if calc "exit !($flo < $want)"; then hi=0 fhi=$flo lo=-0.5; flo=$(frac_at $lo)
        while calc "exit !($flo < $want)"; do lo=$(calc "print 2 * $lo"); flo=$(frac_at "$lo"); done
    else fhi=$(frac_at $hi)
        while calc "exit !($fhi >= $want)"; do hi=$(calc "print 2 * $hi"); fhi=$(frac_at "$hi"); done
    fi
    for ((i = 0; i < 10; i++)); do
        calc "exit !($flo - $want <= 0.01)" && { echo "$lo"; return; }
        calc "exit !($want - $fhi <= 0.01)" && { echo "$hi"; return; }
        t=$(awk -v lo="$lo" -v hi="$hi" -v a="$flo" -v b="$fhi" -v w="$want" '
            function lgt(p) { if (p < 1e-5) p = 1e-5; if (p > 1 - 1e-5) p = 1 - 1e-5; return log(p / (1 - p)) }
            BEGIN { za = lgt(a); zb = lgt(b); zw = lgt(w)
                t = (za == zb) ? (lo + hi) / 2 : lo + (hi - lo) * (zw - za) / (zb - za)
                if (!(t > lo && t < hi)) t = (lo + hi) / 2
                printf "%.6g\n", t }')
        f=$(frac_at "$t")
        if calc "exit !($f >= $want)"; then lo=$t flo=$f; else hi=$t fhi=$f; fi
    done
    # closest end after the step limit
    calc "exit !($flo - $want <= $want - $fhi)" && echo "$lo" || echo "$hi"
}
declare -a thr_list
if [ -n "$thresholds" ]; then
    IFS=, read -r -a thr_list <<<"$thresholds"
    [ "${#thr_list[@]}" = "${#frac_list[@]}" ] || die "--thresholds: give one per fraction (${#frac_list[@]})"
    for t in "${thr_list[@]}"; do [[ $t =~ ^-?[0-9.]+([eE][-+]?[0-9]+)?$ ]] || die "--thresholds: '$t' is not a number"; done
fi
for f in "${frac_list[@]}"; do
    [ -n "$thresholds" ] && break
    log "searching the threshold for $(fmt "$(calc "print 100 * $f")" 0)% active neurons"
    t=$(find_threshold "$f")
    [[ $t =~ ^-?[0-9.eE+-]+$ ]] || die "threshold search failed for $f"
    thr_list+=("$t")
done
log "thresholds: ${thr_list[*]} for fractions ${frac_list[*]}"

# --- PowerInfer side by side: greedy tokens and bytes ---------------------------------------
# One text prompt for both. PowerInfer's main tokenizes it with special tokens parsed, which in
# its llama.cpp (late 2023) also drops SPM's dummy leading space; Hearth adds it as llama.cpp does
# today. So PowerInfer gets the prompt with a leading space, and the token ids are compared.
pi_ctx=$((n_gen + 64 + ${#pi_prompt} / 2)) # a token per 2 characters at most, for a margin
pi_dir=$cache/powerinfer-run # its main writes main.log files into the working folder
declare -A sbs_check sbs_frac sbs_bpt sbs_thr
hearth_run() { # model threshold threads [extra flags...]
    local m=$1 t=$2 n=$3
    shift 3
    "$hearth" run -m "$m" -p "$pi_prompt" -n "$n_gen" -t "$n" -c "$pi_ctx" --temp 0 --repeat-penalty 1 --ignore-eos \
        --gpu off --ffn predicted --sparse-threshold "$t" --no-display-prompt "$@"
}
pinf_run() { # model threshold threads [extra flags...]
    local m=$1 t=$2 n=$3
    shift 3
    (cd "$pi_dir" && LLAMA_SPARSE_PRED_THRESHOLD=$t "$pinf" -m "$m" -p " $pi_prompt" -n "$n_gen" -t "$n" -c "$pi_ctx" \
        --temp 0 --repeat-penalty 1 --ignore-eos --seed 1 "$@")
}
# "same 31/31" or where the greedy tokens part: PowerInfer's eval lines in its main.log are the
# prompt, then each sampled token but the last; Hearth's dump has the prompt and every step.
compare_tokens() { # hearth-dump powerinfer-log
    local hp pp ht pt
    hp=$(grep -o '"prompt_tokens":\[[0-9,]*\]' "$1" | grep -o '[0-9][0-9,]*' | tr ',' ' ')
    ht=$(grep -o '"token":[0-9]*' "$1" | cut -d: -f2 | tr '\n' ' ')
    pp=$(grep -m 1 '] tokens: \[' "$2" | grep -o ":[0-9]*\( ,\|, \| \]\)" | grep -o '[0-9]*' | tr '\n' ' ')
    pt=$(grep '] eval: \[' "$2" | tail -n +2 | grep -o ":[0-9]* \]" | grep -o '[0-9]*' | tr '\n' ' ')
    awk -v hp="$hp" -v pp="$pp" -v ht="$ht" -v pt="$pt" -v dump="$1" 'BEGIN {
        nh = split(hp, a, " "); np = split(pp, b, " ")
        if (nh != np) { printf "prompt tokens differ (%d vs %d)", nh, np; exit }
        for (i = 1; i <= nh; i++) if (a[i] != b[i]) { printf "prompt tokens differ at %d", i; exit }
        nh = split(ht, a, " "); np = split(pt, b, " ")
        if (np == 0) { printf "no PowerInfer tokens"; exit }
        for (i = 1; i <= np && i <= nh; i++) if (a[i] != b[i]) break
        if (i > np) { printf "same %d/%d (prompt %d tokens)", np, np, split(hp, a, " "); exit }
        # margin: Hearth logit of its token minus Hearth logit of PowerInfer token, at step i
        k = 0; m = ""
        while ((getline line < dump) > 0) if (line ~ /"logits":\[/ && ++k == i) {
            sub(/.*"logits":\[/, "", line); sub(/\].*/, "", line); split(line, lg, ",")
            m = sprintf("; Hearth logit margin there %.3g", lg[a[i] + 1] - lg[b[i] + 1]); break }
        printf "first %d same, then Hearth %s, PowerInfer %s%s", i - 1, a[i], b[i], m }'
}
if [ -n "$pinf" ]; then
    mkdir -p "$pi_dir" || die "cannot create $pi_dir"
    for ty in "${pi_type_list[@]}"; do
        if [ "$ty" = q4_0 ]; then
            for k in "${!frac_list[@]}"; do sbs_thr[$ty,$k]=${thr_list[$k]}; done
        elif [ -n "$pi_f16_thresholds" ]; then
            IFS=, read -r -a tl <<<"$pi_f16_thresholds"
            [ "${#tl[@]}" = "${#frac_list[@]}" ] || die "--pi-f16-thresholds: give one per fraction (${#frac_list[@]})"
            for k in "${!frac_list[@]}"; do sbs_thr[$ty,$k]=${tl[$k]}; done
        else
            : >"$seen"
            for k in "${!frac_list[@]}"; do
                log "searching the F16 file's threshold for $(fmt "$(calc "print 100 * ${frac_list[$k]}")" 0)% active neurons"
                t=$(search_model=${pi_file[$ty]} find_threshold "${frac_list[$k]}")
                [[ $t =~ ^-?[0-9.eE+-]+$ ]] || die "threshold search failed for $ty ${frac_list[$k]}"
                sbs_thr[$ty,$k]=$t
            done
        fi
        for k in "${!frac_list[@]}"; do
            t=${sbs_thr[$ty,$k]} m=${pi_file[$ty]}
            # Hearth's tokens do not depend on the thread count (bit-identical by design), so one
            # dump serves every PowerInfer run; this run also warms the page cache for both.
            log "side by side, $ty, threshold $t: untimed hearth run (its greedy tokens, neurons computed)"
            hearth_run "$m" "$t" "$max_t" --dump "$cache/sbs-dump-$ty-$k.json" --stats >/dev/null 2>"$cache/err" ||
                die "hearth run failed on $m: $(tail -n 1 "$cache/err")"
            sbs_frac[$ty,$k]=$(awk '$1 == "mean" { sub(/%/, "", $2); print $2 / 100 }' "$cache/err")
            log "  Hearth computed $(fmt "$(calc "print 100 * ${sbs_frac[$ty,$k]:-0}")" 1)% of the neurons"
            "$hearth" bench -m "$m" -t "$max_t" -p 8 -n 8 -r 1 --json --ffn predicted --sparse-threshold "$t" >"$out" 2>"$cache/err" ||
                die "hearth bench failed on $m: $(tail -n 1 "$cache/err")"
            # bytes at the run's fraction: the bench's non-FFN bytes + its FFN bytes scaled
            kernels=$(jstr "$out" cpu_kernels)
            sbs_bpt[$ty,$k]=$(awk -v b="$(jnum "$out" bytes_per_token)" -v fb="$(jnum "$out" ffn_bytes_per_token)" \
                -v f="$(jnum "$out" computed_fraction)" -v fr="${sbs_frac[$ty,$k]}" \
                'BEGIN { if (f + 0 == 0 || fr == "") print b; else print b - fb + fb * fr / f }')
        done
    done
fi

# --- interleaved runs ----------------------------------------------------------------------
# configurations: id|label|kind|model|flags
configs=()
[ "$llama" = 1 ] && configs+=("llama|llama.cpp, dense twin|llama|$twin|")
[ "$pi_only" = 1 ] || configs+=("twin|Hearth dense, twin (smallthinker)|hearth|$twin|--ffn dense")
[ "$pi_only" = 1 ] || configs+=("pidense|Hearth --ffn dense, PowerInfer file|hearth|$pi|--ffn dense")
[ "$pi_only" = 1 ] || configs+=("attn|Hearth attention only (n_ff 32)|hearth|$attn|--ffn dense")
[ "$pi_only" = 1 ] || configs+=("none|Hearth predicted, threshold +1e30 (no neurons)|hearth|$pi|--ffn predicted --sparse-threshold 1e30")
for k in "${!frac_list[@]}"; do
    [ "$pi_only" = 1 ] && break
    configs+=("p$k|Hearth predicted, threshold ${thr_list[$k]}|hearth|$pi|--ffn predicted --sparse-threshold ${thr_list[$k]}")
done
if [ -n "$pinf" ]; then
    for ty in "${pi_type_list[@]}"; do
        for k in "${!frac_list[@]}"; do
            configs+=("sh_${ty}_$k|hearth run, $ty|hrun|${pi_file[$ty]}|${sbs_thr[$ty,$k]}")
            configs+=("sp_${ty}_$k|PowerInfer main, $ty|pinf|${pi_file[$ty]}|${sbs_thr[$ty,$k]}")
        done
    done
fi
declare -A tps bpt frac pbt fbt ptps
run_config() { # config threads
    local id label kind model flags
    IFS='|' read -r id label kind model flags <<<"$1"
    # side by side: evaluations per second, both counting single-token evals (the last sampled
    # token is never evaluated): Hearth's (decoded - 1) / decode time, PowerInfer's eval line
    if [ "$kind" = hrun ]; then
        if hearth_run "$model" "$flags" "$2" >/dev/null 2>"$cache/err"; then
            tps[$id,$2]+="$(sed -n 's/.*decode: \([0-9]*\) tokens in \([0-9.]*\) s.*/\1 \2/p' "$cache/err" |
                awk '$1 > 1 && $2 > 0 { print ($1 - 1) / $2 }') "
            ptps[$id,$2]+="$(sed -n 's/^prompt: [0-9]* tokens in [0-9.]* s (\([0-9.]*\) tok.s).*/\1/p' "$cache/err") "
        else
            log "hearth run failed ($label, $2 threads): $(tail -n 1 "$cache/err")"
        fi
        return
    fi
    if [ "$kind" = pinf ]; then
        rm -f "$pi_dir"/main*.log
        if pinf_run "$model" "$flags" "$2" >/dev/null 2>"$cache/err"; then
            local c tk=${id#sp_}
            c=$(compare_tokens "$cache/sbs-dump-${tk%_*}-${tk##*_}.json" "$(ls -t "$pi_dir"/main*.log | head -n 1)")
            [[ "${sbs_check[$id,$2]:-}" == *"$c"* ]] || sbs_check[$id,$2]+="${sbs_check[$id,$2]:+; }$c"
            tps[$id,$2]+="$(sed -n 's/^llama_print_timings: *eval time = *\([0-9.]*\) ms \/ *\([0-9]*\) runs.*/\2 \1/p' "$cache/err" |
                awk '$2 > 0 { print 1000 * $1 / $2 }') "
            ptps[$id,$2]+="$(sed -n 's/^llama_print_timings: prompt eval time = *\([0-9.]*\) ms \/ *\([0-9]*\) tokens.*/\2 \1/p' "$cache/err" |
                awk '$2 > 0 { print 1000 * $1 / $2 }') "
        else
            log "PowerInfer main failed ($label, $2 threads): $(grep -v '^ *$' "$cache/err" | tail -n 1)"
        fi
        return
    fi
    if [ "$kind" = llama ]; then
        if node "$llama_ref" bench --model "$model" --threads "$2" --prompt-tokens "$n_prompt" -n "$n_gen" \
            --runs 1 >"$out" 2>"$cache/err"; then
            tps[$id,$2]+="$(jnum "$out" decode_tps) "
        else
            log "llama.cpp bench failed ($2 threads): $(tail -n 1 "$cache/err")"
        fi
        return
    fi
    # shellcheck disable=SC2086
    if "$hearth" bench -m "$model" -t "$2" -p "$n_prompt" -n "$n_gen" -r 1 --json $flags >"$out" 2>"$cache/err"; then
        tps[$id,$2]+="$(jnum "$out" decode_tok_s) "
        frac[$id,$2]+="$(jnum "$out" computed_fraction) "
        bpt[$id,$2]=$(jnum "$out" bytes_per_token)
        pbt[$id,$2]=$(jnum "$out" predictor_bytes_per_token)
        fbt[$id,$2]=$(jnum "$out" ffn_bytes_per_token) kernels=$(jstr "$out" cpu_kernels)
    else
        log "hearth bench failed ($label, $2 threads): $(tail -n 1 "$cache/err")"
    fi
}
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
t_start=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
    for n in "${thread_list[@]}"; do
        order=("${configs[@]}")
        if [ $((r % 2)) = 0 ]; then
            order=()
            for ((k = ${#configs[@]} - 1; k >= 0; k--)); do order+=("${configs[$k]}"); done
        fi
        for c in "${order[@]}"; do
            log "round $r/$rounds, $n thread(s): $(cut -d'|' -f2 <<<"$c")"
            run_config "$c" "$n"
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
minutes=$(( ($(date +%s) - t_start + 59) / 60 ))

# --- report --------------------------------------------------------------------------------
report_main() {
params_layer=$((4 * E * E + 3 * E * FF)) params_pred=$((E * RANK + RANK * FF))
pred_pct=$(calc "printf \"%.1f\", 100 * $layers * $params_pred / ($layers * ($params_layer + $params_pred) + 2 * $VOCAB * $E)")
echo "## Sparse decode benchmark: predicted FFN vs dense"
echo
echo "Synthetic PowerInfer file: n_embd $E, n_ff $FF, $layers layers, $HEADS heads, vocab $VOCAB, Q4_0, ReGLU," \
     "random predictor of rank $RANK ($pred_pct% of the file's parameters; PowerInfer's trained predictors are 6-9%)," \
     "and its dense twin (same seed: smallthinker, one expert, the same weights; llama.cpp loads it)."
echo "Prompt $n_prompt tokens, $n_gen decoded; $rounds interleaved round(s), one timed run per configuration" \
     "per round (after Hearth's untimed warm-up), medians over rounds. Took $minutes min."
echo "Hearth $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') + working tree ($hearth, CPU kernels ${kernels:-?});" \
     "llama.cpp: $([ "$llama" = 1 ] && echo "node-llama-cpp 3.22.1 (its own timing counters)" || echo "not run")."
echo "Memory read bandwidth (membw, best of 7):" \
     "$(for n in "${thread_list[@]}"; do printf '%s GB/s at %s thread(s). ' "$(fmt "$(bw "$n")")" "$n"; done)"
echo "Load average (1/5/15 min) at start: $load_start; at end: $load_end ($(nproc) cores, shared machine)."
echo "Thresholds ($([ -n "$thresholds" ] && echo "given" || echo "found by search") for ${frac_list[*]} active): ${thr_list[*]}."
echo
echo "- active = neurons computed / (n_ff x layers x decoded tokens), counted by the engine in the timed runs."
echo "- bytes/token = weights read (non-FFN + active share of the FFN matrices + predictor) + K/V cache."
echo "- FFN GB/s = FFN bytes read per token / (ms/token - ms/token without FFN work: the +1e30 row for"
echo "  predicted rows, the attention-only row for dense rows); FFN eff. = that over the twin's dense FFN GB/s."
echo "- predictor time = (ms/token at +1e30 - attention-only ms/token) / ms/token of the row."
echo
echo "| threads | configuration | active | decode tok/s | ms/token | bytes/token | GB/s | share of membw | vs Hearth dense twin | vs PowerInfer --ffn dense | FFN GB/s | FFN eff. | predictor bytes | predictor time |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${thread_list[@]}"; do
    declare -A ms=()
    for c in "${configs[@]}"; do
        id=${c%%|*}
        d=$(median <<<"${tps[$id,$n]:-}")
        ms[$id]=$(awk -v d="$d" 'BEGIN { if (d == "" || d + 0 == 0) print ""; else print 1000 / d }')
    done
    twin_ffn_gbs=$(awk -v t="${ms[twin]}" -v a="${ms[attn]}" -v f="${fbt[twin,$n]:-}" \
        'BEGIN { if (t == "" || a == "" || f == "" || t - a <= 0) print ""; else print f / ((t - a) / 1000) / 1e9 }')
    for c in "${configs[@]}"; do
        IFS='|' read -r id label kind model flags <<<"$c"
        [ "$kind" = hrun ] || [ "$kind" = pinf ] && continue
        d=$(median <<<"${tps[$id,$n]:-}")
        b=${bpt[$id,$n]:-}
        [ "$kind" = llama ] && b=${bpt[twin,$n]:-}
        fr=$(median <<<"${frac[$id,$n]:-}")
        [ "$kind" = llama ] && fr=1
        awk -v n="$n" -v label="$label" -v id="$id" -v d="$d" -v b="$b" -v fr="$fr" -v m="$(bw "$n")" \
            -v ms="${ms[$id]}" -v mtwin="${ms[twin]}" -v mpi="${ms[pidense]}" -v mattn="${ms[attn]}" \
            -v mnone="${ms[none]}" -v fb="${fbt[$id,$n]:-}" -v pb="${pbt[$id,$n]:-}" -v tffn="$twin_ffn_gbs" '
        function f(x, dd) { return x == "" ? "-" : sprintf("%." dd "f", x) }
        BEGIN {
            pred = id ~ /^(none|p[0-9]+)$/
            gbs = (d == "" || b == "") ? "" : d * b / 1e9
            share = (gbs == "" || m + 0 == 0) ? "-" : sprintf("%.0f%%", 100 * gbs / m)
            s1 = (ms == "" || mtwin == "" || id == "twin" || id == "attn") ? "-" : sprintf("%.2fx", mtwin / ms)
            s2 = (ms == "" || mpi == "" || id == "pidense" || id == "attn") ? "-" : sprintf("%.2fx", mpi / ms)
            base = pred ? mnone : (id == "twin" || id == "pidense") ? mattn : ""
            ffn = (base == "" || fb == "" || ms == "" || id == "none" || ms - base <= 0) ? "" : fb / ((ms - base) / 1000) / 1e9
            eff = (ffn == "" || tffn == "") ? "-" : sprintf("%.0f%%", 100 * ffn / tffn)
            pt = (pred && ms != "" && mnone != "" && mattn != "" && mnone > mattn) ? sprintf("%.1f%%", 100 * (mnone - mattn) / ms) : "-"
            pbs = (pb == "" || pb + 0 == 0 || b == "") ? "-" : sprintf("%.1f%%", 100 * pb / b)
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, label,
                fr == "" ? "-" : sprintf("%.1f%%", 100 * fr), f(d, 2), f(ms, 0), b == "" ? "-" : sprintf("%.0f MB", b / 1e6),
                f(gbs, 2), share, s1, s2, f(ffn, 2), eff, pbs, pt
        }'
    done
done
}
[ "$pi_only" = 1 ] || report_main

# --- PowerInfer side by side -----------------------------------------------------------------
if [ -z "$pinf" ]; then
    echo
    echo "PowerInfer side by side: skipped (no --powerinfer PATH; PowerInfer is not part of this repository)."
    exit 0
fi
echo
echo "## PowerInfer side by side: hearth run vs PowerInfer main on the same PowerInfer files (CPU)"
echo
echo "PowerInfer $pinf ($(git -C "$(dirname "$pinf")" rev-parse --short HEAD 2>/dev/null || echo 'CPU build')):" \
     "\`main -m FILE -p PROMPT -n $n_gen -t N -c $pi_ctx --temp 0 --repeat-penalty 1 --ignore-eos\` with" \
     "LLAMA_SPARSE_PRED_THRESHOLD; Hearth $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') (CPU kernels ${kernels:-?}):" \
     "\`hearth run\` with the same flags, \`--gpu off --ffn predicted --sparse-threshold T\`."
echo "Prompt \"$pi_prompt\" (PowerInfer gets it with a leading space: its main drops SPM's dummy prefix), $n_gen tokens;" \
     "interleaved round by round with the other runs, medians over $rounds round(s). Files: $(for ty in "${pi_type_list[@]}"; do
         printf '%s %s layers (%s MB); ' "$ty" "${pi_layers[$ty]}" "$(($(stat -c %s "${pi_file[$ty]}") / 1000000))"; done)"
echo "Load average (1/5/15 min) at start: $load_start; at end: $load_end."
echo
echo "- tok/s = single-token evaluations per second (PowerInfer: its eval line; Hearth: (tokens - 1) / decode time)."
echo "- active = Hearth's computed share of FFN neurons in the untimed check run (\`--stats\`); PowerInfer computes"
echo "  the same neurons when its tokens agree. bytes/token: \`hearth bench\`'s count at that share; GB/s = tok/s x bytes."
echo "- greedy tokens: PowerInfer's in the timed runs at that thread count (each distinct result once) against"
echo "  Hearth's (one untimed run; Hearth's tokens do not depend on the thread count)."
echo
echo "| threads | file | threshold | active | bytes/token | Hearth tok/s | PowerInfer tok/s | Hearth / PowerInfer | Hearth GB/s | PowerInfer GB/s | membw GB/s | prompt tok/s Hearth | PowerInfer | greedy tokens |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${thread_list[@]}"; do
    for ty in "${pi_type_list[@]}"; do
        for k in "${!frac_list[@]}"; do
            h=$(median <<<"${tps[sh_${ty}_$k,$n]:-}") p=$(median <<<"${tps[sp_${ty}_$k,$n]:-}")
            hp=$(median <<<"${ptps[sh_${ty}_$k,$n]:-}") pp=$(median <<<"${ptps[sp_${ty}_$k,$n]:-}")
            awk -v n="$n" -v ty="$ty" -v L="${pi_layers[$ty]}" -v t="${sbs_thr[$ty,$k]}" -v fr="${sbs_frac[$ty,$k]:-}" \
                -v b="${sbs_bpt[$ty,$k]:-}" -v h="$h" -v p="$p" -v hp="$hp" -v pp="$pp" -v m="$(bw "$n")" \
                -v chk="${sbs_check[sp_${ty}_$k,$n]:-}" '
            function f(x, d) { return x == "" ? "-" : sprintf("%." d "f", x) }
            BEGIN {
                printf "| %s | %s, %s layers | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", n, ty, L, t,
                    fr == "" ? "-" : sprintf("%.1f%%", 100 * fr), b == "" ? "-" : sprintf("%.0f MB", b / 1e6), f(h, 2), f(p, 2),
                    (h == "" || p == "" || p + 0 == 0) ? "-" : sprintf("%.2fx", h / p),
                    (h == "" || b == "") ? "-" : f(h * b / 1e9, 2), (p == "" || b == "") ? "-" : f(p * b / 1e9, 2), f(m, 1),
                    f(hp, 1), f(pp, 1), chk == "" ? "-" : chk
            }'
        done
    done
done
