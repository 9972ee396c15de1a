#!/bin/sh
# hearth bench: flag errors, and the --json report's arithmetic on a tiny synthetic model:
# KV bytes recomputed here from the shape, bytes/token = weights + KV, GB/s = tok/s x bytes.
# Usage: bench.sh HEARTH_BIN
set -u
H="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

expect() {
    code=$1 pat=$2
    shift 3
    "$@" >"$T/out" 2>&1
    got=$?
    if [ "$got" != "$code" ] || ! grep -q -- "$pat" "$T/out"; then
        echo "FAIL: $* -> exit $got (want $code), output:"; sed 's/^/  /' "$T/out" | head -5
        fails=$((fails + 1))
    fi
}

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
expect 0 "decode bandwidth" -- "$H" bench -m "$M" -t 1 -p 8 -n 4 -r 1

if ! "$H" bench -m "$M" -t 2 -p 16 -n 8 -r 3 --json >"$T/j" 2>"$T/err"; then
    echo "FAIL: bench --json"; cat "$T/err"; exit 1
fi
[ "$(wc -l <"$T/j")" -eq 1 ] || { echo "FAIL: --json printed more than one line"; fails=$((fails + 1)); }
num() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" "$T/j"; }
for k in prompt_tok_s decode_tok_s weight_bytes_per_token kv_bytes_per_token bytes_per_token decode_gb_s threads; do
    [ -n "$(num $k)" ] || { echo "FAIL: no $k in $(cat "$T/j")"; fails=$((fails + 1)); }
done
grep -q '"decode_tok_s_runs":\[[0-9.]*,[0-9.]*,[0-9.]*\]' "$T/j" || { echo "FAIL: not 3 decode runs"; fails=$((fails + 1)); }
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

[ "$fails" -eq 0 ] && echo ok
exit "$fails"
