#!/bin/sh
# hearth bench --profile on a tiny synthetic model: every expected row in the decode and prompt
# tables, shares that add up to 100% (text) and to 1 (JSON), finite GB/s, calls per token that
# the shape fixes (2 layers: 5 norms, 2 attentions, 2 RoPEs, 13 dense products per token: q, k,
# v, o, gate and up as one paired product, down, per layer, and the output).
# Usage: profile.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"
C="--gpu off"
M="$T/m.gguf"
"$H" synth -q -o "$M" --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --n-vocab 400 --seed 3 >/dev/null 2>&1 ||
    { echo "FAIL: synth"; exit 1; }

"$H" bench -m "$M" -t 2 -p 8 -n 6 -r 2 --profile $C >"$T/txt" 2>"$T/err" || { echo "FAIL: bench --profile"; cat "$T/err"; exit 1; }
# rows of one phase's table: from its "profile PHASE" line to its "total" line
rows() { awk -v ph="$1" '$1 == "profile" { on = ($2 == ph ":") ; next } on && $1 == "total" { on = 0 } on && $1 != "op" && $1 != "process"' "$T/txt"; }
rows decode >"$T/dec"
rows prompt >"$T/pro"
for op in matvec attention norm rope elementwise sync other; do
    grep -q "^ *$op " "$T/dec" || { echo "FAIL: no decode row $op"; cat "$T/txt"; fails=$((fails + 1)); }
done
grep -q "^ *gemm " "$T/pro" || { echo "FAIL: no prompt gemm row"; fails=$((fails + 1)); }
# the prompt's one product of a single row is the output matrix (logits of the last token only)
awk '$1 == "matvec" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) c = $(i + 1) } END { exit !(c >= 0.12 && c <= 0.13) }' "$T/pro" ||
    { echo "FAIL: prompt matvec calls/token not 1/8 (the output row)"; fails=$((fails + 1)); }
grep -q "^ *gemm " "$T/dec" && { echo "FAIL: gemm while decoding"; fails=$((fails + 1)); }
grep -qi "nan\|inf" "$T/dec" "$T/pro" && { echo "FAIL: non-finite numbers"; cat "$T/txt"; fails=$((fails + 1)); }
for f in dec pro; do
    # share: the column ending in %; typed rows have one more column than untyped ones
    awk '{ for (i = 1; i <= NF; i++) if ($i ~ /%$/) { sub(/%/, "", $i); s += $i } }
         END { if (s < 99.5 || s > 100.5) { print "FAIL: shares sum to " s "%"; exit 1 } }' "$T/$f" || fails=$((fails + 1))
done
calls() { awk -v op="$1" '$1 == op { for (i = 1; i <= NF; i++) if ($i ~ /%$/) c += $(i + 1) } END { printf "%.2f", c }' "$T/dec"; }
[ "$(calls norm)" = "5.00" ] || { echo "FAIL: norm calls/token $(calls norm) want 5"; fails=$((fails + 1)); }
[ "$(calls attention)" = "2.00" ] || { echo "FAIL: attention calls/token $(calls attention) want 2"; fails=$((fails + 1)); }
[ "$(calls matvec)" = "13.00" ] || { echo "FAIL: matvec calls/token $(calls matvec) want 13"; fails=$((fails + 1)); }
awk '$1 == "matvec" { if (!($NF > 0)) { print "FAIL: matvec GB/s " $NF; exit 1 } }' "$T/dec" || fails=$((fails + 1))

"$H" bench -m "$M" -t 1 -p 8 -n 6 -r 1 --profile --json $C >"$T/j" 2>"$T/err" || { echo "FAIL: --profile --json"; cat "$T/err"; exit 1; }
[ "$(wc -l <"$T/j")" -eq 1 ] || { echo "FAIL: --json printed more than one line"; fails=$((fails + 1)); }
for ph in decode prompt; do
    sed "s/.*\"$ph\":{\"tokens\"\([^]]*\)\].*/\1/" "$T/j" | tr '{' '\n' |
        awk -F'"share":' 'NF > 1 { split($2, a, ","); s += a[1]; n++ }
             END { if (n < 5 || s < 0.995 || s > 1.005) { print "FAIL: " n " rows, shares sum to " s; exit 1 } }' ||
        { echo "  ($ph)"; fails=$((fails + 1)); }
done
grep -q '"gb_s":[0-9]' "$T/j" || { echo "FAIL: no gb_s"; fails=$((fails + 1)); }
grep -qi 'nan\|inf' "$T/j" && { echo "FAIL: non-finite JSON"; fails=$((fails + 1)); }
# predicted mode on a PowerInfer file: with its FFN rows bundled a decoded token's FFN is one
# fused operation (sparse_ffn); with -nr, gathers and the axpy
P="$T/p.gguf"
"$H" synth -q -o "$P" --powerinfer --act reglu --pred-rank 16 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 256 \
    --n-vocab 400 --seed 3 >/dev/null 2>&1 || { echo "FAIL: synth --powerinfer"; exit 1; }
for nr in "" "-nr"; do
    # shellcheck disable=SC2086
    "$H" bench -m "$P" -t 2 -p 4 -n 6 -r 1 --profile --sparse-threshold 0 $nr $C >"$T/txt" 2>"$T/err" || { echo "FAIL: bench --profile $nr"; cat "$T/err"; exit 1; }
    rows decode >"$T/dec"
    if [ -z "$nr" ]; then want="sparse_ffn" gone="axpy"; else want="axpy" gone="sparse_ffn"; fi
    grep -q "^ *$want " "$T/dec" || { echo "FAIL: predicted decode ${nr:-bundled}: no $want row"; cat "$T/dec"; fails=$((fails + 1)); }
    grep -q "^ *$gone " "$T/dec" && { echo "FAIL: predicted decode ${nr:-bundled}: a $gone row"; fails=$((fails + 1)); }
    awk -v op="$want" '$1 == op { if (!($NF > 0)) { print "FAIL: " op " GB/s " $NF; exit 1 } }' "$T/dec" || fails=$((fails + 1))
done

# without --profile: no profile member
"$H" bench -m "$M" -t 1 -p 4 -n 2 -r 1 --json $C | grep -q '"profile"' && { echo "FAIL: profile without --profile"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "profile: all passed"
exit "$fails"
