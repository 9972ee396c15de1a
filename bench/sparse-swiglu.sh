#!/usr/bin/env bash
# SwiGLU section of the sparse decode benchmark (run as `bench/sparse.sh --swiglu ...` or
# directly): FFN mode threshold on a 7B-shaped synthetic SwiGLU llama (n_embd 4096, n_ff
# 11008, 32 layers, 32 heads, vocab 32000) in Q4_0 (hearth synth) and Q4_K_M (hearth quantize
# of the Q4_0 file: requantized weights, the same bytes per weight as a real Q4_K_M), at 25%,
# 40% and 50% sparsity, against the same model dense.
# Per type: the dense file; `hearth calibrate --target-sparsity 0.4` on a short text writes
# its threshold file (ffn_down_t, the sparse down projection); the one threshold for every
# layer that gives each target share on decode is then found by a bracketed search on short
# `hearth bench --ffn-threshold X` runs (the synthetic layers are alike, so one value serves
# all; the table reports the share measured in the timed runs, not the target).
# Dense and the sparse rows run interleaved round by round (order reversed every other
# round); medians over the rounds. Prints one Markdown table on stdout; progress on stderr.
# --precisions P,...: also predicted mode on a threshold file with predictors (`hearth synth
# --powerinfer --pred-rank R`, random predictors of the type's weights, then the same
# calibrate): for each sparsity S and precision P, rows that read what a predictor of that
# precision at full recall reads: it marks a share min(1, (1-S)/P) of the neurons (their gate
# rows), of which the share 1-S passes the threshold (up and down rows). A random predictor is
# independent of the gate, so the script searches the --sparse-threshold that marks that
# share and the --ffn-threshold that passes (1-S)/share of all neurons. Speed of the rows
# read, not quality: the trained predictors' precision is measured on a real model (README).
# Bytes per token there: the gate rows of the marked neurons, up and down of the computed
# ones, the predictor, the rest of the model.
#
# usage: bench/sparse-swiglu.sh [--quick] [--layers N] [--types q4_0,Q4_K_M] [--threads 2]
#                               [--runs R] [--gen N] [--prompt N] [--sparsities 0.25,0.40,0.50]
#                               [--hearth BIN] [--dir CACHE] [--precisions 0.6,0.8,1] [--pred-rank 512]
#   --quick      1 round, 16 decoded tokens
#   --layers N   layers (default 32; fewer when RAM or disk cannot hold a type's two files)
#   CACHE        generated models; default $HEARTH_BENCH_DIR or build-bench/
# Not a ctest: it takes many minutes and its numbers depend on what else the machine is doing.
set -u
me=sparse-swiglu.sh
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
threads=2 rounds=3 n_gen=32 n_prompt=8 layers= types=q4_0,Q4_K_M sparsities=0.25,0.40,0.50 precisions= pred_rank=512
hearth=${HEARTH_BIN:-} membw=none cache=${HEARTH_BENCH_DIR:-$root/build-bench}
E=4096 FF=11008 HEADS=32 VOCAB=32000 SEED=1

while [ $# -gt 0 ]; do
    case $1 in
    --quick) rounds=1 n_gen=16 ;;
    --layers) need "$@"; posint "$1" "$2"; layers=$2; shift ;;
    --types) need "$@"; types=$2; shift ;;
    --threads) need "$@"; threads=$2; shift ;;
    --runs) need "$@"; posint "$1" "$2"; rounds=$2; shift ;;
    --gen) need "$@"; posint "$1" "$2"; n_gen=$2; shift ;;
    --prompt) need "$@"; posint "$1" "$2"; n_prompt=$2; shift ;;
    --sparsities) need "$@"; sparsities=$2; shift ;;
    --hearth) need "$@"; hearth=$2; shift ;;
    --precisions) need "$@"; precisions=$2; shift ;;
    --pred-rank) need "$@"; posint "$1" "$2"; pred_rank=$2; shift ;;
    --dir) need "$@"; cache=$2; shift ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown flag '$1' (try --help)" ;;
    esac
    shift
done
IFS=, read -r -a type_list <<<"$types"
IFS=, read -r -a thread_list <<<"$threads"
IFS=, read -r -a sp_list <<<"$sparsities"
for t in "${thread_list[@]}"; do posint --threads "$t"; done
for s in "${sp_list[@]}"; do [[ $s =~ ^0?\.[0-9]+$ ]] || die "--sparsities: '$s' is not in (0, 1)"; done
for t in "${type_list[@]}"; do [[ $t =~ ^(q4_0|Q4_K_M)$ ]] || die "--types: '$t' is not q4_0 or Q4_K_M"; done
IFS=, read -r -a prec_list <<<"$precisions"
for p in "${prec_list[@]}"; do [[ $p =~ ^(0?\.[0-9]+|1)$ ]] || die "--precisions: '$p' is not in (0, 1]"; done
[ -z "$precisions" ] || [[ " ${type_list[*]} " == " q4_0 " ]] || die "--precisions needs --types q4_0 (synth writes the predictor file)"
mkdir -p "$cache" || die "cannot create $cache"
[ -z "$hearth" ] || [ -x "$hearth" ] || die "--hearth $hearth is not executable"
bench_find_tools_hearth() { # lib.sh's finder without membw (bandwidth is bench/sparse.sh's)
    if [ -z "$hearth" ]; then
        for c in "$root/build/hearth" $(ls -t "$root"/build*/hearth 2>/dev/null); do
            [ -x "$c" ] && "$c" bench --help 2>/dev/null | grep -q -- --ffn-threshold && { hearth=$c; break; }
        done
    fi
    [ -n "$hearth" ] || die "no hearth binary with 'bench --ffn-threshold' (build it, or pass --hearth BIN)"
}
bench_find_tools_hearth
max_t=$(printf '%s\n' "${thread_list[@]}" | sort -n | tail -n 1)
calc() { awk "BEGIN { $1 }" </dev/null; }

# --- sizes: Q4_0 is 18 bytes per 32 weights (Q4_K_M about 4.8 bits: similar) ----------------
per_layer=$(((4 * E * E + 3 * E * FF) * 18 / 32)) emb=$((2 * VOCAB * E * 18 / 32))
need_bytes() { echo $((2 * ($1 * per_layer + emb))); } # a type's dense + threshold files
avail_ram=$(($(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo) * 1024))
avail_disk=$(($(df -Pk "$cache" | awk 'NR == 2 { print $4 }') * 1024))
reserve=$((3 * 1024 * 1024 * 1024))
fit=32
while [ "$fit" -gt 1 ] && [ "$(need_bytes "$fit")" -gt $((avail_ram - reserve)) ]; do fit=$((fit - 1)); done
if [ -z "$layers" ]; then
    layers=$fit
    [ "$layers" -lt 32 ] && log "RAM available $((avail_ram >> 20)) MiB holds $layers layers of a type's two files, not 32: using $layers"
fi
[ "$((${#type_list[@]} * $(need_bytes "$layers")))" -lt "$avail_disk" ] || die "not enough disk in $cache for ${#type_list[@]} type(s) x 2 files"
log "layers $layers: a type's two files need $(($(need_bytes "$layers") >> 20)) MiB; RAM available $((avail_ram >> 20)) MiB, disk $((avail_disk >> 20)) MiB"

# --- models --------------------------------------------------------------------------------
tag=e$E-l$layers-h$HEADS-ff$FF-v$VOCAB
text=$cache/swiglu-calib.txt
printf 'In the beginning God created the heaven and the earth. And the earth was without form, and void.\n' >"$text"
make_file() { # out command... ; written under a temporary name so an interrupted run leaves no truncated model
    local f=$1
    shift
    [ -s "$f" ] && return 0
    log "writing $f"
    "$@" >"$cache/make.out" 2>"$cache/err" && [ -s "$f.part" ] && mv "$f.part" "$f" ||
        { rm -f "$f.part"; die "failed: $* ($(tail -n 1 "$cache/err"))"; }
}
dense_file() { echo "$cache/swiglu-$1-$tag.gguf"; }
thr_file() { echo "$cache/swiglu-$1-$tag.threshold.gguf"; }
make_dense() { # type: the dense file (Q4_K_M from the Q4_0 one)
    local t=$1 d
    d=$(dense_file "$t")
    if [ "$t" = q4_0 ]; then
        make_file "$d" "$hearth" synth -q -o "$d.part" --type q4_0 --arch llama --act swiglu --n-embd $E --n-layer "$layers" \
            --n-head $HEADS --n-ff $FF --n-vocab $VOCAB --seed $SEED
    else
        make_dense q4_0
        make_file "$d" "$hearth" quantize -q "$(dense_file q4_0)" "$d.part" "$t"
    fi
}
pred_file() { echo "$cache/swiglu-$1-$tag-r$pred_rank.pred.threshold.gguf"; }
make_pred() { # type: a file with random predictors (synth --powerinfer), then its threshold file
    local t=$1 d
    d=$cache/swiglu-$t-$tag-r$pred_rank.pred.gguf
    make_file "$d" "$hearth" synth -q -o "$d.part" --type "$t" --arch llama --act swiglu --powerinfer --pred-rank "$pred_rank" \
        --n-embd $E --n-layer "$layers" --n-head $HEADS --n-ff $FF --n-vocab $VOCAB --seed $SEED
    make_file "$(pred_file "$t")" "$hearth" calibrate -m "$d" -f "$text" --target-sparsity 0.4 -c 32 -t "$max_t" \
        -o "$(pred_file "$t").part"
}
make_type() { # type: its dense file, then its threshold file
    local t=$1 d
    d=$(dense_file "$t")
    make_dense "$t"
    make_file "$(thr_file "$t")" "$hearth" calibrate -m "$d" -f "$text" --target-sparsity 0.4 -c 32 -t "$max_t" \
        -o "$(thr_file "$t").part"
}

# --- one threshold per target share: bracketed search on computed_fraction ---------------------
out=$cache/swiglu-out.json
frac_at() { # file threshold [flags] -> computed fraction on a short decode
    # shellcheck disable=SC2086
    "$hearth" bench -m "$1" -t "$max_t" -p 1 -n 8 -r 1 --json ${3:---ffn threshold} --ffn-threshold "$2" >"$out" 2>"$cache/err" ||
        die "hearth bench failed at threshold $2 ${3:-}: $(tail -n 1 "$cache/err")"
    local f
    f=$(jnum "$out" computed_fraction)
    log "  threshold $2 -> $(fmt "$(calc "print 100 * $f")" 2)% computed"
    echo "$f"
}
find_threshold() { # file target-fraction start -> threshold (computed fraction within 0.01)
    local m=$1 want=$2 lo=0 flo=1 hi=$3 fhi t f i
    fhi=$(frac_at "$m" "$hi")
    while calc "exit !($fhi >= $want)"; do lo=$hi flo=$fhi hi=$(calc "print 2 * $hi"); fhi=$(frac_at "$m" "$hi"); done
    for ((i = 0; i < 8; i++)); do
        calc "exit !($flo - $want <= 0.01)" && { echo "$lo"; return; }
        calc "exit !($want - $fhi <= 0.01)" && { echo "$hi"; return; }
        # linear between the bracket ends (|silu| has a smooth density from 0 up, so the share
        # computed falls about linearly with the threshold), bisection when that leaves the bracket
        t=$(awk -v lo="$lo" -v hi="$hi" -v a="$flo" -v b="$fhi" -v w="$want" '
            BEGIN { t = (a == b) ? (lo + hi) / 2 : lo + (hi - lo) * (a - w) / (a - b)
                if (!(t > lo && t < hi)) t = (lo + hi) / 2
                printf "%.6g\n", t }')
        f=$(frac_at "$m" "$t")
        if calc "exit !($f >= $want)"; then lo=$t flo=$f; else hi=$t fhi=$f; fi
    done
    calc "exit !($flo - $want <= $want - $fhi)" && echo "$lo" || echo "$hi"
}

find_pred_x() { # file target-fraction -> --sparse-threshold whose predictor marks that share (bisection)
    local m=$1 want=$2 lo=-1 hi=1 f x i
    while calc "exit !($(frac_at "$m" 0 "--ffn predicted --sparse-threshold $lo") < $want)"; do lo=$(calc "print 2 * $lo"); done
    while calc "exit !($(frac_at "$m" 0 "--ffn predicted --sparse-threshold $hi") > $want)"; do hi=$(calc "print 2 * $hi"); done
    for ((i = 0; i < 12; i++)); do
        x=$(calc "printf \"%.6g\", ($lo + $hi) / 2")
        f=$(frac_at "$m" 0 "--ffn predicted --sparse-threshold $x")
        calc "exit !(($f - $want) ^ 2 <= 0.0001)" && { echo "$x"; return; }
        if calc "exit !($f > $want)"; then lo=$x; else hi=$x; fi
    done
    echo "$x"
}

# --- per type: files, thresholds, interleaved timed runs -------------------------------------
declare -A tps bpt frac thr_of pshare ffnb predb
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
t_start=$(date +%s)
run_config() { # id model flags threads
    # shellcheck disable=SC2086
    if "$hearth" bench -m "$2" -t "$4" -p "$n_prompt" -n "$n_gen" -r 1 --json $3 >"$out" 2>"$cache/err"; then
        tps[$1,$4]+="$(jnum "$out" decode_tok_s) "
        frac[$1,$4]+="$(jnum "$out" computed_fraction) "
        bpt[$1,$4]=$(jnum "$out" bytes_per_token) ffnb[$1,$4]=$(jnum "$out" ffn_bytes_per_token)
        predb[$1,$4]=$(jnum "$out" predictor_bytes_per_token) kernels=$(jstr "$out" cpu_kernels)
    else
        log "hearth bench failed ($1, $4 threads): $(tail -n 1 "$cache/err")"
    fi
}
for ty in "${type_list[@]}"; do
    make_type "$ty"
    d=$(dense_file "$ty") th=$(thr_file "$ty")
    bench_evict "$d" "$th" # read afresh by Hearth, in 2 MiB pages (bench/lib.sh)
    start=$(grep -E '^ +0 +[0-9.e-]+$' "$cache/make.out" 2>/dev/null | awk '{ print $2 }')
    [[ ${start:-} =~ ^[0-9.]+(e-?[0-9]+)?$ ]] && calc "exit !($start > 0)" || start=0.05
    configs=("$ty:dense|$d|--ffn dense")
    for s in "${sp_list[@]}"; do
        log "$ty: searching the threshold for $(fmt "$(calc "print 100 * $s")" 0)% sparsity"
        t=$(find_threshold "$th" "$(calc "print 1 - $s")" "$start")
        [[ $t =~ ^[0-9.]+([eE][-+]?[0-9]+)?$ ]] || die "threshold search failed for $ty at $s"
        thr_of[$ty,$s]=$t
        configs+=("$ty:$s|$th|--ffn threshold --ffn-threshold $t")
        for p in "${prec_list[@]}"; do
            make_pred "$ty"
            pf=$(pred_file "$ty")
            share=$(calc "v = (1 - $s) / $p; print (v > 1 ? 1 : v)")
            log "$ty: predicted at $s, precision $p: marking $share of the neurons"
            x=$(calc "exit !($share >= 1)" && echo -1e30 || find_pred_x "$pf" "$share")
            tp=$(find_threshold "$pf" "$(calc "print (1 - $s) / $share")" "$start")
            pshare[$ty,$s,$p]=$(frac_at "$pf" 0 "--ffn predicted --sparse-threshold $x")
            thr_of[$ty,$s,$p]="$x / $tp"
            configs+=("$ty:$s:$p|$pf|--ffn predicted --sparse-threshold $x --ffn-threshold $tp")
        done
    done
    for ((r = 1; r <= rounds; r++)); do
        for n in "${thread_list[@]}"; do
            order=("${configs[@]}")
            if [ $((r % 2)) = 0 ]; then
                order=()
                for ((k = ${#configs[@]} - 1; k >= 0; k--)); do order+=("${configs[$k]}"); done
            fi
            for c in "${order[@]}"; do
                IFS='|' read -r id model flags <<<"$c"
                log "round $r/$rounds, $n thread(s): $id"
                run_config "$id" "$model" "$flags" "$n"
            done
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
minutes=$((($(date +%s) - t_start + 59) / 60))

# --- report --------------------------------------------------------------------------------
echo "## Sparse decode benchmark: FFN mode threshold on SwiGLU vs dense"
echo
echo "Synthetic SwiGLU llama: n_embd $E, n_ff $FF, $layers layers, $HEADS heads, vocab $VOCAB (hearth synth, seed $SEED;" \
     "Q4_K_M requantized from the Q4_0 file). Threshold files from \`hearth calibrate --target-sparsity 0.4\`" \
     "(ffn_down_t); one --ffn-threshold per row, found by search."
echo "Prompt $n_prompt tokens, $n_gen decoded; $rounds interleaved round(s), medians. Took $minutes min (making the models not cached included)."
echo "Hearth $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?') + working tree ($hearth, CPU kernels ${kernels:-?})."
echo "Load average (1/5/15 min) at start: $load_start; at end: $load_end ($(nproc) cores, shared machine)."
echo
echo "| type | threads | configuration | sparsity (measured) | decode tok/s | vs dense | bytes/token | GB/s |"
echo "|---|---|---|---|---|---|---|---|"
for ty in "${type_list[@]}"; do
    for n in "${thread_list[@]}"; do
        dd=$(median <<<"${tps[$ty:dense,$n]:-}")
        ids=(dense)
        for s in "${sp_list[@]}"; do
            ids+=("$s")
            for p in "${prec_list[@]}"; do ids+=("$s:$p"); done
        done
        for id in "${ids[@]}"; do
            d=$(median <<<"${tps[$ty:$id,$n]:-}") fr=$(median <<<"${frac[$ty:$id,$n]:-}") b=${bpt[$ty:$id,$n]:-}
            label="dense"
            [ "$id" = dense ] || [[ $id == *:* ]] || label="threshold ${thr_of[$ty,$id]} (target $id)"
            if [[ $id == *:* ]]; then # predicted: the marked neurons' gate rows, up and down of the computed ones
                ps=${pshare[$ty,${id%:*},${id#*:}]} fd=${ffnb[$ty:dense,$n]:-}
                label="predicted, precision ${id#*:}: marks $(fmt "$(calc "print 100 * $ps")" 1)%, --sparse-threshold / --ffn-threshold ${thr_of[$ty,${id%:*},${id#*:}]} (target ${id%:*})"
                [ -n "$b" ] && [ -n "$fd" ] && b=$(calc "printf \"%.0f\", $b - ${ffnb[$ty:$id,$n]} + $fd * ($ps + 2 * $fr) / 3")
            fi
            awk -v ty="$ty" -v n="$n" -v l="$label" -v d="$d" -v dd="$dd" -v fr="$fr" -v b="$b" -v dense="$([ "$id" = dense ] && echo 1)" '
            BEGIN {
                sp = (dense || fr == "") ? "0%" : sprintf("%.1f%%", 100 * (1 - fr))
                vs = (dense || d == "" || dd == "") ? "-" : sprintf("%.2fx", d / dd)
                printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", ty, n, l, sp, d == "" ? "-" : sprintf("%.2f", d), vs,
                    b == "" ? "-" : sprintf("%.0f MB", b / 1e6), (d == "" || b == "") ? "-" : sprintf("%.2f", d * b / 1e9)
            }'
        done
    done
done
