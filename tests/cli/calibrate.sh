#!/bin/sh
# hearth calibrate: outputs (PowerInfer file that runs, statistics file, plot, table) and
# flag/input errors with their exit codes.
# usage: calibrate.sh HEARTH_BINARY
set -u
. "$(dirname "$0")/check.sh"

M=$TMP/m.gguf
SHAPE="--n-embd 64 --n-head 4 --n-ff 128 --n-layer 2 --n-vocab 400 -q"
"$HEARTH" synth -o "$M" --act reglu --type f16 $SHAPE || { echo "FAIL: synth"; exit 1; }
"$HEARTH" synth -o "$TMP/swiglu.gguf" $SHAPE || { echo "FAIL: synth"; exit 1; }
i=0
while [ $i -lt 300 ]; do
    printf 'the quick brown fox %d jumps over the lazy dog and runs far away\n' $i
    i=$((i + 1))
done >"$TMP/text.txt"

OUT=$TMP/out.gguf
expect 0 "calibrate" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" -o "$OUT" --plot "$TMP/p.svg" \
    --max-rank 32 --tokens 800 -c 64 -t 2 --recall 0.95
has out "layer    fired sparsity   recall precision     r   pred bytes"
[ "$(grep -cE '^ +[0-9]+ +[0-9.]+% ' "$TMP/out")" -eq 2 ] || bad "table has not 2 layer rows: $(cat "$TMP/out")"
has err "counting"
has err "training"
has err "wrote $OUT"
[ -s "$OUT" ] && [ -s "$TMP/out.stats.gguf" ] && [ -s "$TMP/p.svg" ] || bad "output files missing"
head -c 4 "$OUT" | grep -q PWRI || bad "output magic is not PWRI"
expect 0 "inspect output" -- "$HEARTH" inspect "$OUT"
has out "blk.1.fc1.weight"
grep -qE "blk\.1\.fc1\.weight +f16" "$TMP/out" || bad "an F16 model's predictors are not F16"
has out "blk.1.ffn_down_t.weight"
expect 0 "inspect stats" -- "$HEARTH" inspect "$TMP/out.stats.gguf"
has out "hearth.stats.n_layer = 2"
has out "blk.1.act_count"
grep -q "<svg" "$TMP/p.svg" && grep -q "polyline" "$TMP/p.svg" || bad "plot is not an SVG with curves"
expect 0 "perplexity on the output (predicted mode)" -- "$HEARTH" perplexity -m "$OUT" -f "$TMP/text.txt" -c 64 --chunks 2 -t 2 --gpu off
has out "Final estimate"

"$HEARTH" synth -o "$TMP/m32.gguf" --act reglu --type f32 $SHAPE || { echo "FAIL: synth"; exit 1; }
head -n 40 "$TMP/text.txt" >"$TMP/short.txt"
expect 0 "F16 predictors of an F32 model" -- "$HEARTH" calibrate -m "$TMP/m32.gguf" -f "$TMP/short.txt" -o "$TMP/p16.gguf" --max-rank 8 \
    --tokens 100 -c 64 -t 2 --predictor-type f16
expect 0 "inspect F16 predictors" -- "$HEARTH" inspect "$TMP/p16.gguf"
grep -qE "blk\.1\.fc1\.weight +f16" "$TMP/out" && grep -qE "blk\.1\.fc2\.weight +f16" "$TMP/out" && grep -qE "blk\.1\.ffn_up\.weight +f32" "$TMP/out" ||
    bad "--predictor-type f16 did not write F16 predictors beside F32 weights"
expect 0 "perplexity with F16 predictors" -- "$HEARTH" perplexity -m "$TMP/p16.gguf" -f "$TMP/short.txt" -c 64 --chunks 1 -t 2 --gpu off
has out "Final estimate"

"$HEARTH" synth -o "$TMP/md.gguf" --act drelu --type f32 $SHAPE || { echo "FAIL: synth"; exit 1; }
expect 0 "linear predictors" -- "$HEARTH" calibrate -m "$TMP/md.gguf" -f "$TMP/text.txt" -o "$TMP/lin.gguf" --predictor-form linear \
    --tokens 800 -c 64 -t 2 --recall 0.95
has err "fitting"
expect 0 "inspect linear predictors" -- "$HEARTH" inspect "$TMP/lin.gguf"
grep -qE "blk\.1\.fc2\.bias +f32 +\[256\]" "$TMP/out" && grep -qE "blk\.1\.fc2\.weight +f32 +\[[0-9]+, 256\]" "$TMP/out" ||
    bad "a dReLU model's linear predictor has not 2 x 128 score rows and their biases: $(grep fc2 "$TMP/out")"
expect 0 "perplexity with linear predictors" -- "$HEARTH" perplexity -m "$TMP/lin.gguf" -f "$TMP/short.txt" -c 64 --chunks 1 -t 2 --gpu off
has out "Final estimate"
expect 0 "synth with linear predictors" -- "$HEARTH" synth -o "$TMP/sl.gguf" --powerinfer --pred-linear --act drelu --pred-rank 16 $SHAPE
expect 0 "inspect synthetic linear predictors" -- "$HEARTH" inspect "$TMP/sl.gguf"
grep -qE "blk\.0\.fc2\.bias +f32 +\[256\]" "$TMP/out" || bad "synth --pred-linear wrote no 256-row bias: $(grep fc2 "$TMP/out")"
expect 0 "predicted mode on synthetic linear predictors" -- "$HEARTH" run -m "$TMP/sl.gguf" -p "the quick" -n 4 --ffn predicted --gpu off
expect 2 "synth --pred-linear without --powerinfer" -- "$HEARTH" synth -o "$TMP/sl2.gguf" --pred-linear $SHAPE
has err "pred_linear needs powerinfer"
expect 2 "bad predictor form" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --predictor-form relu
has err "--predictor-form 'relu': powerinfer or linear"
expect 2 "min precision without the linear form" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --min-precision 0.5
has err "--min-precision needs --predictor-form linear"
expect 2 "linear form with thresholds" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --predictor-form linear --target-sparsity 0.3
has err "--predictor-form with --target-sparsity needs --predictors"
"$HEARTH" synth -o "$TMP/opt.gguf" --arch opt --act relu --type f32 $SHAPE || { echo "FAIL: synth"; exit 1; }
expect 1 "linear form of a LayerNorm model" -- "$HEARTH" calibrate -m "$TMP/opt.gguf" -f "$TMP/text.txt" --predictor-form linear -c 64
has err "needs an RMSNorm model"

cp "$M" "$TMP/m2.gguf"
expect 0 "default output name" -- "$HEARTH" calibrate -m "$TMP/m2.gguf" -f "$TMP/text.txt" --max-rank 16 --tokens 200 -c 64 -t 2
[ -s "$TMP/m2.powerinfer.gguf" ] && [ -s "$TMP/m2.powerinfer.stats.gguf" ] || bad "default outputs missing"

expect 0 "help" -- "$HEARTH" calibrate --help
has out "usage: hearth calibrate"
expect 2 "no model" -- "$HEARTH" calibrate -f "$TMP/text.txt"
has err "a model is required"
expect 2 "no text" -- "$HEARTH" calibrate -m "$M"
has err "a calibration text is required"
expect 2 "bad recall" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --recall 2
has err "--recall"
expect 2 "bad rank" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --max-rank 2
has err "--max-rank"
expect 2 "bad predictor type" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --predictor-type q8_0
has err "--predictor-type 'q8_0'"
expect 2 "predictor type without predictors" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --target-sparsity 0.3 --predictor-type f16
has err "needs --predictors"
expect 2 "unknown flag" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" --bogus 1
has err "unknown flag '--bogus'"
expect 2 "missing value" -- "$HEARTH" calibrate -m "$M" -f
expect 1 "missing text" -- "$HEARTH" calibrate -m "$M" -f "$TMP/none.txt"
has err "cannot read"
expect 1 "missing model" -- "$HEARTH" calibrate -m "$TMP/none.gguf" -f "$TMP/text.txt"
has err "none.gguf"
expect 1 "swiglu" -- "$HEARTH" calibrate -m "$TMP/swiglu.gguf" -f "$TMP/text.txt" -o "$TMP/sw.gguf"
has err "ReLU-family"
[ -e "$TMP/sw.gguf" ] && bad "a file was written for a refused model"
expect 1 "unwritable output" -- "$HEARTH" calibrate -m "$M" -f "$TMP/text.txt" -o "$TMP/no/dir/x.gguf" --max-rank 16 --tokens 100 -c 64
has err "no/dir/x.gguf"

[ $fail -eq 0 ] && echo ok
exit $fail
