#!/bin/sh
# hearth calibrate on mixtures of experts: the statistics file, the transposed-down model
# (ReGLU experts) on which --ffn exact gives dense mode's greedy tokens, --stats and --verbose
# lines about the experts, expert predictors (skipped where they do not pay, trained on
# low-rank gates, --ffn predicted and its --stats), and SwiGLU experts (routing counts only).
# usage: moe_calibrate.sh HEARTH_BINARY
set -u
. "$(dirname "$0")/check.sh"

SHAPE="--n-embd 64 --n-head 4 --n-head-kv 2 --n-ff 64 --n-layer 2 --n-vocab 400 --n-expert 6 --n-expert-used 2 -q"
"$HEARTH" synth -o "$TMP/st.gguf" --arch smallthinker --type q8_0 $SHAPE || { echo "FAIL: synth"; exit 1; }
"$HEARTH" synth -o "$TMP/qw.gguf" --arch qwen3moe --type f32 $SHAPE || { echo "FAIL: synth"; exit 1; }
i=0
while [ $i -lt 60 ]; do
    printf 'the quick brown fox %d jumps over the lazy dog\n' $i
    i=$((i + 1))
done >"$TMP/text.txt"

expect 1 "--predictor-type on experts" -- "$HEARTH" calibrate -m "$TMP/st.gguf" -f "$TMP/text.txt" -o "$TMP/pt.gguf" --predictor-type f16
has err "--predictor-type is for dense models"
expect 0 "calibrate smallthinker" -- "$HEARTH" calibrate -m "$TMP/st.gguf" -f "$TMP/text.txt" -c 64 -t 2 -v
# random full-rank gates: no expert predictor pays (the reason per expert with --verbose)
has err "no predictor: would read"
has out " 0/6 "
has out "busiest experts"
[ "$(grep -cE '^ +[0-9]+  #[0-9]+ ' "$TMP/out")" -eq 2 ] || bad "table has not 2 layer rows: $(cat "$TMP/out")"
has err "wrote $TMP/st.sparse.gguf"
[ -s "$TMP/st.sparse.gguf" ] && [ -s "$TMP/st.sparse.stats.gguf" ] || bad "output files missing"
expect 0 "inspect" -- "$HEARTH" inspect "$TMP/st.sparse.gguf"
has out "blk.1.ffn_down_exps_t.weight"

RUN="run -m $TMP/st.sparse.gguf -p hello -n 24 --temp 0 -t 2"
expect 0 "dense" -- "$HEARTH" $RUN --ffn dense
cp "$TMP/out" "$TMP/dense.txt"
expect 0 "exact" -- "$HEARTH" $RUN --ffn exact --stats --verbose
cmp -s "$TMP/out" "$TMP/dense.txt" || bad "exact and dense tokens differ on the transposed file"
has err "routing"
has err "top #"
has err "whole experts per layer"

# hot neurons of host experts on the (stand-in) device: a budget with the dense parts and half
# an expert's bytes puts none whole but some neurons, by the statistics' firing counts; the
# tokens stay exact mode's (hearth place reports the same count)
expect 0 "probe" -- "$HEARTH" $RUN --ffn exact --gpu standin --vram-budget 1 --verbose
used=$(sed -n 's/.*gpu: bytes: budget [0-9]* used \([0-9]*\) .* hot \([0-9]*\) .*/\1 \2/p' "$TMP/err")
half=$(echo "$used" | awk '{ printf "%.9f", ($1 - $2 + 65536 + $2 / 24) / 1073741824 }')
expect 0 "expert neurons" -- "$HEARTH" $RUN --ffn exact --gpu standin --vram-budget "$half" --verbose
cmp -s "$TMP/out" "$TMP/dense.txt" || bad "tokens with expert neurons on the device differ from the CPU's"
has err "gpu: 0 of 12 experts on the device"
nn=$(sed -n 's/.*; \([0-9]*\) expert neurons on the device.*/\1/p' "$TMP/err")
[ -n "$nn" ] && [ "$nn" -gt 0 ] || bad "no expert neurons on the device: $(grep 'expert neurons' "$TMP/err")"
expect 0 "place expert neurons" -- "$HEARTH" place -m "$TMP/st.sparse.gguf" --vram-budget "$half" --ffn exact
has out "0 of 12 experts on the GPU, $nn expert neurons of"
# beside an expert cache of one slot per layer: the other experts' hot neurons, tokens unchanged;
# hearth place reports the same plan and writes no index
expect 0 "expert cache + neurons" -- "$HEARTH" $RUN --ffn exact --gpu standin --vram-budget 1 --moe-cache 1 --verbose
cmp -s "$TMP/out" "$TMP/dense.txt" || bad "tokens with the expert cache and neurons differ from the CPU's"
has err "gpu: 2 of 12 experts on the device (expert cache slots"
cn=$(sed -n 's/.*; \([0-9]*\) expert neurons on the device.*/\1/p' "$TMP/err")
[ -n "$cn" ] && [ "$cn" -gt 0 ] || bad "no expert neurons beside the cache: $(grep 'expert neurons' "$TMP/err")"
has err "run whole in an expert cache slot instead"
rm -f "$TMP/st.sparse.generated.gpuidx"
expect 0 "place with the cache" -- "$HEARTH" place -m "$TMP/st.sparse.gguf" --vram-budget 1 --ffn exact --moe-cache 1
has out "expert cache: 1 slots per layer"
has out "2 of 12 experts on the GPU, $cn expert neurons of"
has out "wrote no index: a run with --moe-cache"
[ -e "$TMP/st.sparse.generated.gpuidx" ] && bad "hearth place --moe-cache wrote an index"
expect 2 "place --moe-cache 0" -- "$HEARTH" place -m "$TMP/st.sparse.gguf" --vram-budget 1 --moe-cache 0

expect 1 "predicted without predictors" -- "$HEARTH" $RUN --ffn predicted
has err "needs expert predictors"
# low-rank expert gates (predictable firing): a predictor per expert, --ffn predicted runs
# and --stats shows the predictors' precision and recall
"$HEARTH" synth -o "$TMP/lr.gguf" --arch smallthinker --type f32 --expert-gate-rank 3 $SHAPE || { echo "FAIL: synth"; exit 1; }
expect 0 "calibrate low-rank" -- "$HEARTH" calibrate -m "$TMP/lr.gguf" -f "$TMP/text.txt" -c 64 -t 2 -v
has out " 6/6 "
has err "expert predictors for --ffn predicted"
has err "layer 1 expert 5: rank "
expect 0 "predicted" -- "$HEARTH" run -m "$TMP/lr.sparse.gguf" -p hello -n 8 --temp 0 -t 2 --ffn predicted --stats
has err "mode predicted"
has err "experts' predictors: precision"
expect 0 "inspect predictors" -- "$HEARTH" inspect "$TMP/lr.sparse.gguf"
has out "blk.1.fc2_exps.5.weight"

expect 0 "calibrate qwen3moe" -- "$HEARTH" calibrate -m "$TMP/qw.gguf" -f "$TMP/text.txt" -o "$TMP/qw.out.gguf" -c 64 -t 2
has err "routing counts only"
[ -s "$TMP/qw.out.stats.gguf" ] || bad "qwen3moe statistics missing"
[ -e "$TMP/qw.out.gguf" ] && bad "a model file was written for SwiGLU experts"
exit $fail
