#!/bin/sh
# `hearth quantize`: an F32 synth model quantized by the command with --pure equals the same
# seed synthesized directly in the type (whole file, byte for byte, PowerInfer files too); a
# llama.cpp mix name keeps a PowerInfer file PowerInfer (the mixes themselves: test_quant_mix);
# exit codes and messages for bad arguments and files. `hearth place` flags, and the files
# it refuses (dense files and exact mode take no hot neurons).
# usage: quantize.sh HEARTH_BINARY
set -u
H=$1
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail=0
bad() { printf 'FAIL: %s\n' "$*"; fail=1; }
[ -x "$H" ] || { echo "FAIL: $H is not built"; exit 1; }

# expect CODE PATTERN -- COMMAND...: exit status and PATTERN in stdout+stderr
expect() {
    code=$1 pat=$2
    shift 3
    "$@" >"$T/out" 2>&1
    got=$?
    if [ "$got" != "$code" ] || { [ -n "$pat" ] && ! grep -qF -- "$pat" "$T/out"; }; then
        bad "$* -> exit $got (want $code, '$pat'): $(head -3 "$T/out")"
    fi
}

shape="--n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --n-vocab 320 --seed 9 -q"
for pi in "" "--powerinfer --act reglu --pred-rank 32"; do
    "$H" synth -o "$T/f32.gguf" $shape $pi || { echo "FAIL: synth"; exit 1; }
    for t in q8_0 q4_0 f16 bf16; do
        "$H" synth -o "$T/direct.gguf" --type $t $shape $pi || bad "synth $t"
        expect 0 "matrices converted" -- "$H" quantize --pure "$T/f32.gguf" "$T/conv.gguf" $t
        cmp -s "$T/direct.gguf" "$T/conv.gguf" || bad "quantize $t ${pi:+(powerinfer)} differs from synth --type $t"
    done
    # f32 -> f16 -> f32 keeps the shape and the magic; values become f16-rounded
    expect 0 "" -- "$H" quantize -q "$T/f32.gguf" "$T/h.gguf" f16
    expect 0 "" -- "$H" quantize -q "$T/h.gguf" "$T/back.gguf" f32
    [ -s "$T/out" ] && bad "quantize -q printed: $(head -2 "$T/out")"
    expect 0 "" -- "$H" run -m "$T/back.gguf" -p "hello" -n 2 --temp 0
done
head -c 4 "$T/back.gguf" | grep -q PWRI || bad "powerinfer magic lost"
expect 0 "tensor types:" -- "$H" quantize "$T/f32.gguf" "$T/mix.gguf" q4_k_m
head -c 4 "$T/mix.gguf" | grep -q PWRI || bad "powerinfer magic lost under a mix"
expect 0 "15  or  Q4_K_M" -- "$H" quantize --help

expect 2 "unknown type 'q5_k_x'" -- "$H" quantize "$T/f32.gguf" "$T/x.gguf" q5_k_x
expect 2 "unknown type 'i8'" -- "$H" quantize "$T/f32.gguf" "$T/x.gguf" i8
expect 2 "needs IN.gguf OUT.gguf TYPE" -- "$H" quantize "$T/f32.gguf" "$T/x.gguf"
expect 2 "unexpected argument" -- "$H" quantize "$T/f32.gguf" "$T/x.gguf" q8_0 extra
expect 2 "unknown flag '--bogus'" -- "$H" quantize --bogus "$T/f32.gguf" "$T/x.gguf" q8_0
expect 1 "same file" -- "$H" quantize "$T/f32.gguf" "$T/f32.gguf" q8_0
expect 1 "cannot open $T/none.gguf" -- "$H" quantize "$T/none.gguf" "$T/x.gguf" q8_0
printf 'garbage, not a model' >"$T/g.gguf"
expect 1 "g.gguf" -- "$H" quantize "$T/g.gguf" "$T/x.gguf" q8_0
expect 0 "usage: hearth quantize" -- "$H" quantize --help

expect 2 "a model is required" -- "$H" place --vram-budget 1
expect 2 "--vram-budget GIB is required" -- "$H" place -m "$T/f32.gguf"
expect 2 "out of range" -- "$H" place -m "$T/f32.gguf" --vram-budget 1 --group 0
expect 2 "not a number" -- "$H" place -m "$T/f32.gguf" --vram-budget lots
expect 1 "f32.gguf.stats.gguf" -- "$H" place -m "$T/f32.gguf" --vram-budget 1
expect 2 "placement is for a device" -- "$H" place -m "$T/f32.gguf" --vram-budget 1 --gpu off
expect 2 "mode 'sometimes' is unknown" -- "$H" place -m "$T/f32.gguf" --vram-budget 1 --ffn sometimes
expect 2 "out of range" -- "$H" place -m "$T/f32.gguf" --vram-budget 1 -b 0
expect 2 "out of range" -- "$H" place -m "$T/f32.gguf" --vram-budget 1 -np 0
expect 1 "FFN mode exact" -- "$H" place -m "$T/f32.gguf" --vram-budget 1 --ffn exact
"$H" synth -o "$T/dense.gguf" $shape || bad "synth dense"
expect 1 "no hot neurons" -- "$H" place -m "$T/dense.gguf" --vram-budget 1
expect 0 "usage: hearth place" -- "$H" place --help

[ $fail -eq 0 ] && echo ok
exit $fail
