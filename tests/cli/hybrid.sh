#!/bin/sh
# GPU flags (hearth run, bench): bad values, --gpu cuda without a GPU (exit 1 and the reason),
# --gpu auto (silent without CUDA; with CUDA and no GPU one line when a GPU was asked for or with
# --verbose, else silent), the stand-in device end to
# end (same greedy tokens as the CPU; the plan printed with --verbose; bench --json fields),
# -ngl on a dense file, and the GPU index file: made from statistics, read back, reset, disabled,
# and the one hearth place writes read unchanged by hearth run with the same budget.
# Usage: hybrid.sh HEARTH_BIN MODELS_DIR
set -u
H="$1"
MODELS="$2"
. "$(dirname "$0")/expect.sh"

P="$T/p.gguf" D="$T/d.gguf"
"$H" synth -q -o "$P" --powerinfer --act reglu --pred-rank 32 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 256 \
    --n-vocab 400 --seed 3 >/dev/null 2>&1 || { echo "FAIL: synth --powerinfer"; exit 1; }
"$H" synth -q -o "$D" --n-embd 64 --n-layer 3 --n-head 4 --n-ff 128 --n-vocab 400 --seed 4 >/dev/null 2>&1 ||
    { echo "FAIL: synth"; exit 1; }
R="-p hello -n 8 --temp 0 -t 2 -c 64"

expect 0 "--vram-budget GiB" -- "$H" run --help
expect 0 "n-gpu-layers" -- "$H" run --help
expect 0 "disable-gpu-index" -- "$H" bench --help
expect 2 "not one of auto, off, cuda, standin" -- "$H" run -m "$P" $R --gpu bogus
expect 2 "needs a value" -- "$H" run -m "$P" $R --gpu
expect 2 "vram-budget" -- "$H" run -m "$P" $R --vram-budget x
expect 2 "out of range" -- "$H" run -m "$P" $R --vram-budget -1
expect 2 "out of range" -- "$H" run -m "$P" $R -ngl -2
expect 2 "not an integer" -- "$H" run -m "$P" $R --n-gpu-layers many
expect 2 "out of range" -- "$H" run -m "$P" $R --gpu-device 999
expect 2 "not one of" -- "$H" bench -m "$P" --gpu nope

# --gpu cuda: an error with the reason, unless this machine really has a GPU.
"$H" run -m "$P" $R --gpu cuda >"$T/out" 2>"$T/err"
case $? in
0) echo "note: a GPU answered; the no-GPU cases are skipped"; gpu=1 ;;
1) gpu=0
   [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^hearth run: " "$T/err" ||
       { echo "FAIL: --gpu cuda without a GPU: want one error line"; cat "$T/err"; fails=$((fails + 1)); } ;;
*) echo "FAIL: --gpu cuda exited $?"; fails=$((fails + 1)); gpu=0 ;;
esac
if [ "$gpu" = 0 ]; then
    "$H" run -m "$P" $R >"$T/out" 2>"$T/err" || { echo "FAIL: --gpu auto without a GPU failed"; fails=$((fails + 1)); }
    n=$(grep -c "no usable GPU" "$T/err")
    if grep -q "no CUDA backend" "$T/out" "$T/err" || "$H" run -m "$P" $R --gpu cuda 2>&1 | grep -q "no CUDA backend"; then
        [ "$n" -eq 0 ] || { echo "FAIL: --gpu auto in a build without CUDA is not silent"; fails=$((fails + 1)); }
    else
        # quiet by default; one line when a GPU was asked for (-ngl N, a budget) or with --verbose
        [ "$n" -eq 0 ] || { echo "FAIL: --gpu auto with CUDA but no GPU, nothing asked: want no notice"; cat "$T/err"; fails=$((fails + 1)); }
        for asked in "-ngl 2" "--vram-budget 1" "--verbose"; do
            "$H" run -m "$P" $R $asked >"$T/out" 2>"$T/err" || { echo "FAIL: --gpu auto $asked without a GPU failed"; fails=$((fails + 1)); }
            [ "$(grep -c "no usable GPU" "$T/err")" -eq 1 ] && grep -q "^hearth: no usable GPU (.*); running on the CPU$" "$T/err" ||
                { echo "FAIL: --gpu auto $asked with CUDA but no GPU: want exactly one line"; cat "$T/err"; fails=$((fails + 1)); }
        done
    fi
fi

# The stand-in: same greedy tokens as the CPU at several budgets; the plan with --verbose.
toks() { tr ',' '\n' <"$1" | sed -n 's/.*"token":\([0-9]*\).*/\1/p' | tr '\n' ' '; }
"$H" run -m "$P" $R --gpu off --dump "$T/cpu.json" >/dev/null 2>&1 || { echo "FAIL: cpu run"; fails=$((fails + 1)); }
for b in 0.0007 0.00095 0.0013; do
    if ! "$H" run -m "$P" $R --gpu standin --vram-budget $b --verbose --dump "$T/sd.json" >"$T/out" 2>"$T/err"; then
        echo "FAIL: standin at $b GiB"; sed 's/^/  /' "$T/err" | tail -3; fails=$((fails + 1)); continue
    fi
    [ "$(toks "$T/cpu.json")" = "$(toks "$T/sd.json")" ] && [ -n "$(toks "$T/cpu.json")" ] ||
        { echo "FAIL: standin at $b GiB: tokens $(toks "$T/sd.json") != $(toks "$T/cpu.json")"; fails=$((fails + 1)); }
    for pat in "gpu: standin, budget" "attention of 2 layers" "of FFN bytes" "FFN splits"; do
        grep -q "$pat" "$T/err" || { echo "FAIL: standin at $b GiB: no '$pat' in --verbose"; fails=$((fails + 1)); }
    done
done
expect 1 "too small" -- "$H" run -m "$P" $R --gpu standin --vram-budget 0.0001
expect 1 "whole layers" -- "$H" run -m "$P" $R --gpu standin --vram-budget 0.0007 -ngl 2

# -ngl on a dense file; --verbose's host KV cache holds only the layers left on the CPU
kv_mib() { sed -n 's/.*KV cache \([0-9.]*\) MiB.*/\1/p' "$1"; }
"$H" run -m "$D" $R --gpu off --verbose --dump "$T/dc.json" >/dev/null 2>"$T/dc.err" || { echo "FAIL: dense cpu run"; fails=$((fails + 1)); }
for n in 1 4; do
    "$H" run -m "$D" $R --gpu standin --vram-budget 0.05 -ngl $n --verbose --dump "$T/dn.json" >"$T/out" 2>"$T/err" ||
        { echo "FAIL: -ngl $n"; cat "$T/err"; fails=$((fails + 1)); }
    [ "$(toks "$T/dc.json")" = "$(toks "$T/dn.json")" ] || { echo "FAIL: -ngl $n tokens differ"; fails=$((fails + 1)); }
    grep -q "$( [ $n = 1 ] && echo "1 whole layers (1 device-resident)" || echo "3 whole layers (3 device-resident), output on the device")" "$T/err" ||
        { echo "FAIL: -ngl $n: plan"; grep "gpu:" "$T/err"; fails=$((fails + 1)); }
    host=$([ $n = 1 ] && echo 2 || echo 0) # of 3 layers
    awk -v c="$(kv_mib "$T/dc.err")" -v g="$(kv_mib "$T/err")" -v h=$host \
        'BEGIN { d = g - c * h / 3; exit !(c > 0 && g != "" && d < 0.006 && d > -0.006) }' ||
        { echo "FAIL: -ngl $n: host KV cache $(kv_mib "$T/err") MiB, CPU $(kv_mib "$T/dc.err") MiB, want $host/3 of it"; fails=$((fails + 1)); }
done

# bench --json with the stand-in: one line, GPU fields
"$H" bench -m "$P" -t 1 -p 8 -n 4 -r 1 --json --gpu standin --vram-budget 0.00095 >"$T/j" 2>"$T/err" ||
    { echo "FAIL: bench --gpu standin"; cat "$T/err"; fails=$((fails + 1)); }
[ "$(wc -l <"$T/j")" -eq 1 ] || { echo "FAIL: bench --json printed more than one line"; fails=$((fails + 1)); }
for k in '"gpu":"standin"' '"gpu_ffn_share":' '"gpu_act_share":' '"gpu_ffn_splits":' '"gpu_cold_s":' '"gpu_wait_s":'; do
    grep -q "$k" "$T/j" || { echo "FAIL: bench --json has no $k"; fails=$((fails + 1)); }
done
expect 0 "FFN splits" -- "$H" bench -m "$P" -t 1 -p 8 -n 4 -r 1 --gpu standin --vram-budget 0.00095

# GPU index next to (links to) the bundled model and its statistics
if [ -f "$MODELS/bible-drelu.powerinfer.gguf" ]; then
    ln -s "$MODELS/bible-drelu.powerinfer.gguf" "$T/b.gguf" && ln -s "$MODELS/bible-drelu.powerinfer.stats.gguf" "$T/b.stats.gguf"
    B="-m $T/b.gguf -p In -n 4 --temp 0 -t 2 --gpu standin --vram-budget 0.0105 --verbose"
    expect 0 "made from statistics, written to $T/b.gguf.generated.gpuidx" -- "$H" run $B
    [ -f "$T/b.gguf.generated.gpuidx" ] || { echo "FAIL: no index written"; fails=$((fails + 1)); }
    expect 0 "GPU index read from" -- "$H" run $B
    expect 0 "made from statistics" -- "$H" run $B --reset-gpu-index
    expect 0 "serving .*% of activations (statistics)" -- "$H" run $B
    expect 0 "GPU index disabled" -- "$H" run $B --disable-gpu-index
    expect 0 " 0 hot neurons" -- "$H" run $B --disable-gpu-index
    # statistics are found beside the model the index path names: none for this one
    expect 0 "spread evenly" -- "$H" run $B --gpu-index "$T/other.generated.gpuidx"

    # hearth place and hearth run account alike: run reads the index place wrote, byte for
    # byte unchanged, and regenerates it for another budget (as place would have made it)
    ln -s "$MODELS/bible-drelu.powerinfer.gguf" "$T/pl.gguf" && ln -s "$MODELS/bible-drelu.powerinfer.stats.gguf" "$T/pl.stats.gguf"
    I="$T/pl.gguf.generated.gpuidx"
    PL="-m $T/pl.gguf -p In -n 4 --temp 0 -t 2 --gpu standin --verbose"
    "$H" place -m "$T/pl.gguf" --vram-budget 0.0105 --gpu standin --json >"$T/pj" 2>"$T/err" ||
        { echo "FAIL: place"; cat "$T/err"; fails=$((fails + 1)); }
    nbud=$(sed -n 's/.*"neuron_budget": \([0-9]*\),.*/\1/p' "$T/pj")
    sum0=$(cksum <"$I")
    expect 0 "GPU index read from $I" -- "$H" run $PL --vram-budget 0.0105
    grep -q "made from statistics" "$T/out" && { echo "FAIL: run regenerated the index of hearth place"; fails=$((fails + 1)); }
    grep -q "neuron_budget $nbud " "$T/out" ||
        { echo "FAIL: run's neuron budget is not place's ($nbud): $(grep 'gpu: bytes' "$T/out")"; fails=$((fails + 1)); }
    [ -n "$nbud" ] && [ "$(cksum <"$I")" = "$sum0" ] || { echo "FAIL: run changed the index of hearth place"; fails=$((fails + 1)); }
    expect 0 "made from statistics, written to $I" -- "$H" run $PL --vram-budget 0.012
    sum1=$(cksum <"$I")
    [ "$sum1" != "$sum0" ] || { echo "FAIL: another budget left the index unchanged"; fails=$((fails + 1)); }
    expect 0 "wrote $I" -- "$H" place -m "$T/pl.gguf" --vram-budget 0.012 --gpu standin
    [ "$(cksum <"$I")" = "$sum1" ] || { echo "FAIL: place and run made different indexes for 0.012 GiB"; fails=$((fails + 1)); }
    # the context shape is part of the accounting: place for -c 128 is read by run -c 128 only
    expect 0 "wrote $I" -- "$H" place -m "$T/pl.gguf" --vram-budget 0.0105 --gpu standin -c 128
    expect 0 "GPU index read from" -- "$H" run $PL --vram-budget 0.0105 -c 128
    expect 0 "made from statistics" -- "$H" run $PL --vram-budget 0.0105
    expect 0 "GPU index read from" -- "$H" run $PL --vram-budget 0.0105
    expect 0 "made from statistics" -- "$H" run $PL --vram-budget 0.0105 --reset-gpu-index
else
    echo "FAIL: $MODELS/bible-drelu.powerinfer.gguf is missing"; fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] && echo ok
exit "$fails"
