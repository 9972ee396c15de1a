#!/bin/sh
# The shipped SwiGLU model (models/bible-swiglu.gguf, docs/model.md) under threshold sparsity:
# - dense perplexity on the held-out text matches PyTorch's evaluation of the same model
#   (tools/train.py --ffn swiglu prints "held-out file, --chunks 16: ppl 23.214038");
# - --ffn threshold with threshold 0 gives dense's output exactly (every chunk's value);
# - hearth calibrate --target-sparsity 0.25 and 0.40, on held-out text the scored chunks do not
#   contain (the file's last 8 KB; the 16 chunks score tokens of its first ~12 KB), gives files
#   whose perplexity over the first 8 chunks stays within 1% (0.25) and 3% (0.4) of dense's,
#   issue 15's targets: measured +0.02% and +1.50% (22.7743 and 23.1100 vs 22.7695), so the
#   bounds leave 2x or more margin while a broken threshold or sparse path moves perplexity by
#   far more; the 0.4 file really skips
#   about that share of neurons on other text (hearth run --stats; measured 60.0% computed);
# - --allocate at 0.4 (the same text; 256 tokens scored, steps of 0.1 to keep it fast): the
#   per-layer shares it prints average 0.4, the file computes 60% +- 6 of the neurons, and its
#   perplexity over the 8 chunks is at most the uniform file's + 1% (the search minimises KL
#   from dense on calibration text, not held-out perplexity, so it need not be lower; measured
#   23.1100 uniform, 22.9887 allocated; the search takes 2.5 s of the added ~3.5 s).
# - --predictors at 0.4 (the same text; rank 16, 2 epochs): the file runs predicted by default
#   (the gate only for predicted neurons), within 4% of dense over the 8 chunks (measured
#   23.2152, +1.96%: the predictors drop neurons at random, README) and computing 60% +- 6.
# All on the CPU (--gpu off), as tests/cli/model.sh.
# usage: model_swiglu.sh HEARTH_BINARY SOURCE_DIR
set -u
HEARTH=$1
SRC=$2
M=$SRC/models/bible-swiglu.gguf
HELD=$SRC/models/heldout.txt
REF=23.214038
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { printf 'FAIL: %s\n' "$*"; fail=1; }
[ -x "$HEARTH" ] || { echo "FAIL: $HEARTH is not built"; exit 1; }

# ppl_run CHUNKS FILE ARGS...: prints the final estimate; the whole output in $TMP/ppl.out
ppl_run() {
    c=$1 f=$2; shift 2
    "$HEARTH" perplexity -m "$f" -f "$HELD" -c 256 --chunks "$c" -t 2 --gpu off "$@" >"$TMP/ppl.out" 2>"$TMP/ppl.err" ||
        { bad "perplexity $f $*: $(tail -c 300 "$TMP/ppl.err")"; return 1; }
    sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$TMP/ppl.out"
}
within() { awk -v p="$1" -v r="$2" -v t="$3" 'BEGIN { d = p - r; if (d < 0) d = -d; exit !(p != "" && d / r < t) }'; }

dense=$(ppl_run 16 "$M" --ffn dense)
cp "$TMP/ppl.out" "$TMP/dense.out"
# the sparse files are scored on 8 chunks (time); dense's running value after 8 is that score
dense8=$(grep -o '\[8\][0-9.]*' "$TMP/dense.out" | cut -c4-)
if within "$dense" "$REF" 1e-4; then echo "ok: dense ppl $dense (PyTorch $REF)"
else bad "dense ppl '$dense', PyTorch $REF"; fi

ppl_run 16 "$M" --ffn threshold --ffn-threshold 0 >/dev/null
if cmp -s "$TMP/ppl.out" "$TMP/dense.out"; then echo "ok: threshold 0 == dense"
else bad "threshold 0 differs from dense: $(cat "$TMP/ppl.out")"; fi

tail -c 8000 "$HELD" >"$TMP/calib.txt"
head -c 2500 "$HELD" >"$TMP/probe.txt"
# S BOUND: calibrate at S; perplexity within dense x (1 +- BOUND) and not dense's output (so
# something was skipped); with "stats", the share of neurons computed on the file's first 2.5 KB
# near 1 - S
check() {
    s=$1; bound=$2; out=$TMP/t$s.gguf
    # shellcheck disable=SC2086
    "$HEARTH" calibrate -m "$M" -f "$TMP/calib.txt" --target-sparsity "$s" -c 256 -t 2 -o "$out" $4 >"$TMP/cal.out" 2>"$TMP/cal.err" ||
        { bad "calibrate $s: $(tail -c 300 "$TMP/cal.err")"; return; }
    p=$(ppl_run 8 "$out")
    eval "ppl_$5=\$p"
    [ "$p" = "$dense8" ] && bad "target sparsity $s: perplexity equals dense's ($p)"
    if awk -v p="$p" -v d="$dense8" -v b="$bound" 'BEGIN { exit !(p != "" && p >= d * (1 - b) && p <= d * (1 + b)) }'; then
        echo "ok: target sparsity $s: ppl $p (dense $dense8 over 8 chunks, bound +-$bound)"
    else bad "target sparsity $s: ppl '$p', want within dense $dense8 (8 chunks) x (1 +- $bound)"; fi
    [ "$3" = stats ] || return
    "$HEARTH" run -m "$out" -f "$TMP/probe.txt" -n 1 -c 1024 -t 2 --gpu off --stats >/dev/null 2>"$TMP/run.err" ||
        { bad "run $s: $(tail -c 300 "$TMP/run.err")"; return; }
    mean=$(sed -n 's/^  mean *\([0-9.]*\)%.*/\1/p' "$TMP/run.err")
    if awk -v m="$mean" -v s="$s" 'BEGIN { w = 100 * (1 - s); exit !(m != "" && m > w - 6 && m < w + 6) }'; then
        echo "ok: target sparsity $s: computes $mean% of neurons"
    else bad "target sparsity $s: computes '$mean'% of neurons, want $(awk -v s="$s" 'BEGIN { print 100 * (1 - s) }') +- 6"; fi
}
ppl_u40= ppl_a40=
check 0.25 0.01 - "" u25
check 0.4 0.03 stats "" u40
check 0.4 0.03 stats "--allocate --allocate-tokens 256 --allocate-step 0.1" a40
mean_alloc=$(awk '$1 ~ /^[0-9]+$/ && NF == 3 { s += $2; n++ } END { if (n) printf "%.4f", s / n }' "$TMP/cal.out")
check 0.4 0.04 stats "--predictors --max-rank 16 --epochs 2" p40
# the allocated shares (the table's layer rows, not its mean row) average the target
mean=$mean_alloc
if awk -v m="$mean" 'BEGIN { exit !(m != "" && m > 0.395 && m < 0.405) }'; then echo "ok: --allocate 0.4: layers average $mean"
else bad "--allocate 0.4: layer shares average '$mean': $(cat "$TMP/cal.out")"; fi
if awk -v a="$ppl_a40" -v u="$ppl_u40" 'BEGIN { exit !(a != "" && u != "" && a <= u * 1.01) }'; then
    echo "ok: --allocate 0.4: ppl $ppl_a40 <= uniform $ppl_u40 + 1%"
else bad "--allocate 0.4: ppl '$ppl_a40', uniform '$ppl_u40' (+1% allowed)"; fi
exit $fail
