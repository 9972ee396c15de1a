#!/bin/sh
# hearth bench: flag errors, and the --json report's arithmetic on a tiny synthetic model
# (and the CPU kernel table bench and run --verbose report):
# KV bytes recomputed here from the shape, bytes/token = weights + KV, GB/s = tok/s x bytes.
# Sparse modes on a tiny PowerInfer model: the computed fraction is 1 with a threshold no
# score misses and 0 with one no score reaches, and the bytes add up to sizes derived here
# from the shape (FFN and predictor matrices), not taken from the program.
# Usage: bench.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"

# The report models the CPU path's memory traffic: every bench that is measured runs with
# --gpu off (auto would take a GPU where there is one).
C="--gpu off"
M="$T/m.gguf"
"$H" synth -q -o "$M" --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --n-vocab 400 --seed 3 >/dev/null 2>&1 ||
    { echo "FAIL: synth"; exit 1; }

expect 0 "usage: hearth bench" -- "$H" bench --help
expect 2 "a model is required" -- "$H" bench -p 8
expect 2 "unknown flag '--bogus'" -- "$H" bench -m "$M" --bogus
expect 2 "out of range" -- "$H" bench -m "$M" -n 0
expect 2 "out of range" -- "$H" bench -m "$M" -t 0
expect 2 "not an integer" -- "$H" bench -m "$M" -r x
expect 2 "needs a value" -- "$H" bench -m "$M" -p
expect 2 "smaller than prompt" -- "$H" bench -m "$M" -p 16 -n 8 -c 20
expect 1 "/nonexistent.gguf" -- "$H" bench -m /nonexistent.gguf
expect 0 "decode bandwidth" -- "$H" bench -m "$M" -t 1 -p 8 -n 4 -r 1 $C
expect 2 "-mmp: 2 is out of range" -- "$H" bench -m "$M" -mmp 2
expect 2 "-mmp needs a value" -- "$H" bench -m "$M" -mmp
expect 0 "model read into memory (--no-mmap)" -- "$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 -mmp 0 $C

if ! "$H" bench -m "$M" -t 2 -p 16 -n 8 -r 3 --json $C >"$T/j" 2>"$T/err"; then
    echo "FAIL: bench --json"; cat "$T/err"; exit 1
fi
[ "$(wc -l <"$T/j")" -eq 1 ] || { echo "FAIL: --json printed more than one line"; fails=$((fails + 1)); }
num() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" "$T/j"; }
for k in prompt_tok_s decode_tok_s weight_bytes_per_token kv_bytes_per_token bytes_per_token decode_gb_s threads; do
    [ -n "$(num $k)" ] || { echo "FAIL: no $k in $(cat "$T/j")"; fails=$((fails + 1)); }
done
grep -q '"decode_tok_s_runs":\[[0-9.]*,[0-9.]*,[0-9.]*\]' "$T/j" || { echo "FAIL: not 3 decode runs"; fails=$((fails + 1)); }
grep -q '"mmap":true' "$T/j" || { echo "FAIL: the mapped run does not say mmap true"; fails=$((fails + 1)); }
"$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 --json --no-mmap $C 2>/dev/null | grep -q '"mmap":false' ||
    { echo "FAIL: --no-mmap not reported as mmap false"; fails=$((fails + 1)); }
# 2 MiB pages of the file: -1 where the system does not say, else 0..file_bytes
awk -v h="$(num huge_page_bytes)" -v f="$(num file_bytes)" 'BEGIN { exit !(h != "" && f > 0 && (h == -1 || (h >= 0 && h <= f))) }' ||
    { echo "FAIL: huge_page_bytes missing or outside [0, file_bytes] in $(cat "$T/j")"; fails=$((fails + 1)); }
grep -q '"cpu_kernels":"\(scalar\|avx2\|avx512\|amx\|neon\)"' "$T/j" || { echo "FAIL: no cpu_kernels in $(cat "$T/j")"; fails=$((fails + 1)); }
# the kernel table named is the one HEARTH_KERNELS forces (scalar exists everywhere)
HEARTH_KERNELS=scalar "$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 --json $C 2>/dev/null | grep -q '"cpu_kernels":"scalar"' ||
    { echo "FAIL: HEARTH_KERNELS=scalar not reported"; fails=$((fails + 1)); }
expect 0 "(CPU kernels scalar)" -- env HEARTH_KERNELS=scalar "$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 $C
# hearth run --verbose names the table and the thread count
expect 0 "cpu: kernels scalar, 1 threads" -- env HEARTH_KERNELS=scalar "$H" run -m "$M" -p hi -n 2 -t 1 -v $C
# a table that does not exist is named, and the run goes on with the best one
expect 0 "HEARTH_KERNELS=bogus is unknown or not supported by this CPU; using" -- \
    env HEARTH_KERNELS=bogus "$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 $C
"$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 $C 2>&1 | grep -q "HEARTH_KERNELS" &&
    { echo "FAIL: a kernels warning without HEARTH_KERNELS"; fails=$((fails + 1)); }
# 2 layers x 4 KV heads x head_dim 16 x (mean position 16 + 3.5, plus 1) x (2 + 2 bytes, F16 K and V)
want_kv=$(awk 'BEGIN { printf "%d", 2 * 4 * 16 * 20.5 * 4 }')
[ "$(num kv_bytes_per_token)" = "$want_kv" ] || { echo "FAIL: kv bytes $(num kv_bytes_per_token) want $want_kv"; fails=$((fails + 1)); }
awk -v w="$(num weight_bytes_per_token)" -v k="$(num kv_bytes_per_token)" -v b="$(num bytes_per_token)" \
    -v t="$(num decode_tok_s)" -v g="$(num decode_gb_s)" -v p="$(num prompt_tok_s)" 'BEGIN {
    bad = 0
    if (w + k != b) { print "FAIL: bytes_per_token " b " != " w " + " k; bad = 1 }
    # weights of this shape: 2 layers x (4 x 64x64 + 3 x 64x128) f32, output 400x64, embedding row, norms
    ww = (2 * (4 * 64 * 64 + 3 * 64 * 128) + 400 * 64 + 64) * 4
    if (w < ww || w > ww + 4096) { print "FAIL: weight bytes " w " not near " ww; bad = 1 }
    if (t <= 0 || p <= 0) { print "FAIL: non-positive speed"; bad = 1 }
    e = t * b / 1e9
    if (g < e * 0.999 - 0.001 || g > e * 1.001 + 0.001) { print "FAIL: GB/s " g " != " e; bad = 1 }
    exit bad }' || fails=$((fails + 1))

# --- sparse FFN modes ------------------------------------------------------------------------
expect 2 "mode 'bogus' is unknown" -- "$H" bench -m "$M" --ffn bogus
expect 2 "sparse-threshold" -- "$H" bench -m "$M" --sparse-threshold x
expect 2 "needs a value" -- "$H" bench -m "$M" --ffn
P="$T/p.gguf"
"$H" synth -q -o "$P" --powerinfer --act reglu --pred-rank 32 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 \
    --n-vocab 400 --seed 3 >/dev/null 2>&1 || { echo "FAIL: synth --powerinfer"; exit 1; }
expect 0 "of neurons computed while decoding" -- "$H" bench -m "$P" -t 1 -p 8 -n 4 -r 1 --ffn predicted $C
expect 0 "recall" -- "$H" bench -m "$P" -t 1 -p 8 -n 4 -r 1 --stats $C

# sparse_check LABEL WANT_MODE WANT_FRACTION(lo:hi) bench-flags...: one --json run, then the byte sums.
# f32 sizes of this shape: FFN 2 layers x 3 x 64x128 x 4 B, predictor 2 x (64x32 + 32x128) x 4 B.
FFN_B=$((2 * 3 * 64 * 128 * 4)) PRED_B=$((2 * (64 * 32 + 32 * 128) * 4))
sparse_check() {
    label=$1 mode=$2 frac=$3
    shift 3
    if ! "$H" bench -m "$P" -t 1 -p 8 -n 6 -r 2 --json $C "$@" >"$T/j" 2>"$T/err"; then
        echo "FAIL: $label: bench failed"; cat "$T/err"; fails=$((fails + 1)); return
    fi
    grep -q "\"ffn_mode\":\"$mode\"" "$T/j" || { echo "FAIL: $label: mode not $mode: $(cat "$T/j")"; fails=$((fails + 1)); }
    awk -v lbl="$label" -v mode="$mode" -v frange="$frac" -v F="$FFN_B" -v PB="$PRED_B" \
        -v f="$(num computed_fraction)" -v d="$(num dense_weight_bytes)" -v fb="$(num ffn_bytes)" \
        -v pb="$(num predictor_bytes)" -v o="$(num nonffn_bytes_per_token)" -v ft="$(num ffn_bytes_per_token)" \
        -v pt="$(num predictor_bytes_per_token)" -v w="$(num weight_bytes_per_token)" -v k="$(num kv_bytes_per_token)" \
        -v b="$(num bytes_per_token)" -v sh="$(num predictor_byte_share)" 'BEGIN {
        bad = 0; split(frange, r, ":")
        if (f == "" || f < r[1] || f > r[2]) { print "FAIL: " lbl ": fraction " f " not in [" r[1] ", " r[2] "]"; bad = 1 }
        if (fb != F) { print "FAIL: " lbl ": ffn_bytes " fb " want " F; bad = 1 }
        if (pb != PB) { print "FAIL: " lbl ": predictor_bytes " pb " want " PB; bad = 1 }
        if (o != d - F) { print "FAIL: " lbl ": non-FFN bytes " o " want " d - F; bad = 1 }
        wp = mode == "predicted" ? PB : 0
        if (pt != wp) { print "FAIL: " lbl ": predictor bytes/token " pt " want " wp; bad = 1 }
        full = mode == "exact" ? F / 3 : 0   # exact mode reads the whole gate
        wf = full + f * (F - full)
        if (ft < wf - 1 - F * 1e-6 || ft > wf + 1 + F * 1e-6) { print "FAIL: " lbl ": FFN bytes/token " ft " want " wf; bad = 1 }
        if (w != o + ft + pt) { print "FAIL: " lbl ": weights " w " != " o " + " ft " + " pt; bad = 1 }
        if (b != w + k) { print "FAIL: " lbl ": bytes/token " b " != " w " + " k; bad = 1 }
        es = pt / b
        if (sh < es - 1e-6 || sh > es + 1e-6) { print "FAIL: " lbl ": predictor share " sh " want " es; bad = 1 }
        exit bad }' || fails=$((fails + 1))
}
sparse_check "all neurons" predicted 1:1 --sparse-threshold -1e30
sparse_check "no neurons" predicted 0:0 --sparse-threshold 1e30
sparse_check "threshold 0" predicted 0.05:0.95 --sparse-threshold 0
sparse_check "dense" dense 1:1 --ffn dense
sparse_check "exact" exact 0.05:0.95 --ffn exact
sparse_check "default mode" predicted 0:1

# FFN rows bundled per neuron for predicted mode on the CPU (the PowerInfer file has predictors
# and ffn_down_t): reported; not with -nr, other modes, --no-mmap, --mlock, or for dense files.
expect 0 "repack  2 of 2 layers' FFN rows bundled per neuron" -- "$H" bench -m "$P" -t 1 -p 4 -n 2 -r 1 $C
bundled() { "$H" bench -t 1 -p 4 -n 2 -r 1 --json $C "$@" 2>/dev/null | sed -n 's/.*"ffn_bundled_layers":\([0-9-]*\).*/\1/p'; }
[ "$(bundled -m "$P")" = 2 ] || { echo "FAIL: ffn_bundled_layers not 2 on the PowerInfer file"; fails=$((fails + 1)); }
for flags in "-nr" "--no-repack" "--ffn dense" "--ffn exact" "--no-mmap" "--mlock"; do
    # shellcheck disable=SC2086
    [ "$(bundled -m "$P" $flags)" = 0 ] || { echo "FAIL: bundled with $flags"; fails=$((fails + 1)); }
done
[ "$(bundled -m "$M")" = 0 ] || { echo "FAIL: a dense file bundled"; fails=$((fails + 1)); }
# --gpu auto bundles exactly when no GPU answers (this build may have CUDA and a machine without one)
"$H" --list-devices >"$T/dev" 2>&1 || { echo "FAIL: --list-devices exit status"; fails=$((fails + 1)); }
want=0 && grep -q "^  none: " "$T/dev" && want=2
[ "$(bundled -m "$P" --gpu auto)" = "$want" ] || { echo "FAIL: --gpu auto: want $want bundled layers ($(sed -n 2p "$T/dev"))"; fails=$((fails + 1)); }
"$H" bench -m "$P" -t 1 -p 4 -n 2 -r 1 -nr $C 2>&1 | grep -q "^repack" && { echo "FAIL: -nr still reports a repack"; fails=$((fails + 1)); }
expect 0 "repack: 2 of 2 layers' FFN rows bundled per neuron" -- "$H" run -m "$P" -p hi -n 2 -t 1 -v $C
"$H" run -m "$P" -p hello -n 6 -t 1 --temp 0 $C -s 1 >"$T/r1" 2>/dev/null && "$H" run -m "$P" -p hello -n 6 -t 1 --temp 0 $C -s 1 -nr >"$T/r2" 2>/dev/null &&
    cmp -s "$T/r1" "$T/r2" || { echo "FAIL: hearth run's text differs with and without -nr"; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] && echo ok
exit "$fails"
