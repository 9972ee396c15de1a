#!/bin/sh
# The CUDA backend itself, through the CLI, on the CPU emulator (tests/cudaemu; registered
# only in a -DHEARTH_CUDA_EMU=ON build): what a user without a usable GPU is told (no
# device, too old a GPU, a device index that does not exist, budgets too large or too
# small), that --gpu auto falls back to the CPU with one line, that the default budget is
# free memory minus the stated margin (the device's own overhead is not taken twice), and
# that hybrid runs (hot neurons, whole-layer -ngl, dense and PowerInfer files, one and
# two sequences' worth of batch) give the CPU's greedy tokens.
# Usage: cuda_emu.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"
unset HEARTH_CUDAEMU_VRAM HEARTH_CUDAEMU_CC HEARTH_CUDAEMU_CONTEXT

P="$T/p.gguf" D="$T/d.gguf"
"$H" synth -q -o "$P" --powerinfer --act reglu --pred-rank 32 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 256 \
    --n-vocab 400 --seed 3 >/dev/null 2>&1 || { echo "FAIL: synth --powerinfer"; exit 1; }
"$H" synth -q -o "$D" --type q8_0 --n-embd 64 --n-layer 3 --n-head 4 --n-head-kv 2 --n-ff 128 --n-vocab 400 --seed 4 \
    >/dev/null 2>&1 || { echo "FAIL: synth"; exit 1; }
R="-p hello -n 8 --temp 0 -t 2 -c 64"

# No device: an error for --gpu cuda; for --gpu auto the CPU, and one line only when a GPU was
# asked for (-ngl, a budget) or with --verbose.
expect 1 "no CUDA device" -- "$H" run -m "$P" $R --gpu cuda
[ "$(grep -c . "$T/out")" -eq 1 ] || { echo "FAIL: --gpu cuda without a device: want one line"; fails=$((fails + 1)); }
expect 0 "^hearth: no usable GPU (no CUDA device" -- "$H" run -m "$P" $R --verbose
[ "$(grep -c "no usable GPU" "$T/out")" -eq 1 ] || { echo "FAIL: --verbose: want the notice once"; fails=$((fails + 1)); }
expect 0 "^hearth: no usable GPU (no CUDA device" -- "$H" run -m "$P" $R -ngl 1
"$H" run -m "$P" $R >/dev/null 2>"$T/err"
grep -q "no usable GPU" "$T/err" && { echo "FAIL: --gpu auto, nothing asked: the notice is not quiet"; fails=$((fails + 1)); }

# --list-devices (llama.cpp's flag) and FFN bundles: --gpu auto asks the driver before loading,
# so with no device a predicted file's rows are bundled; with one they stay as the file has
# them, for the GPU plan.
expect 0 "^  none: no CUDA device" -- "$H" --list-devices
expect 0 "repack: 2 of 2 layers' FFN rows bundled" -- "$H" run -m "$P" $R -v
expect 0 "^  CUDA0: Hearth CUDA emulator (compute 9.0, 1024 MiB, 724 MiB free)" -- env HEARTH_CUDAEMU_VRAM=1G "$H" --list-devices
expect 0 "^  CUDA0: Hearth CUDA emulator" -- env HEARTH_CUDAEMU_VRAM=1G "$H" run --list-devices
expect 0 "gpu: cuda:0" -- env HEARTH_CUDAEMU_VRAM=1G "$H" run -m "$P" $R -v
grep -q "^repack" "$T/out" && { echo "FAIL: bundled with a device present in --gpu auto"; fails=$((fails + 1)); }

export HEARTH_CUDAEMU_VRAM=1G
expect 1 "compute capability 7.0; Hearth needs 7.5" -- env HEARTH_CUDAEMU_CC=70 "$H" run -m "$P" $R --gpu cuda
expect 1 "CUDA device 1 does not exist (1 device)" -- "$H" run -m "$P" $R --gpu cuda --gpu-device 1
expect 1 "more than the device can give" -- "$H" run -m "$P" $R --gpu cuda --vram-budget 2
expect 1 "too small" -- "$H" run -m "$P" $R --gpu cuda --vram-budget 0.01
expect 0 "no usable GPU" -- "$H" run -m "$P" $R --vram-budget 0.01

# Default budget: free memory less the 512 MiB margin is the arena (1 GiB emulated, less
# its 300 MiB context and the 16 MiB scratch, leaves 196 MiB), and the budget reported is
# that plus the device's own overhead (320 MiB context estimate, 16 MiB local memory, 16 MiB
# scratch): 548 MiB, not the overhead taken twice. Everything fits in it.
expect 0 "gpu: cuda:0, budget 548.00 MiB" -- "$H" run -m "$P" $R --gpu cuda --verbose
grep -q "100.00% of FFN bytes" "$T/out" || { echo "FAIL: the default budget did not hold the whole FFN"; fails=$((fails + 1)); }
# 0.3445 GiB is the overhead (352 MiB) and 0.77 MiB: dense parts and a few hot neurons.
expect 0 "hot neurons = 3.91% of FFN bytes" -- "$H" run -m "$P" $R --gpu cuda --vram-budget 0.3445 --ffn dense --verbose

# Greedy tokens as on the CPU.
toks() { tr ',' '\n' <"$1" | sed -n 's/.*"token":\([0-9]*\).*/\1/p' | tr '\n' ' '; }
same() { # label model ffn-mode device-args...
    label=$1 m=$2 ffn=$3
    shift 3
    "$H" run -m "$m" $R --ffn "$ffn" --gpu off --dump "$T/cpu.json" >/dev/null 2>&1 ||
        { echo "FAIL: $label: CPU run"; fails=$((fails + 1)); return; }
    if ! "$H" run -m "$m" $R --ffn "$ffn" --gpu cuda --dump "$T/gpu.json" "$@" >"$T/out" 2>&1; then
        echo "FAIL: $label: cuda run"; sed 's/^/  /' "$T/out" | tail -3; fails=$((fails + 1)); return
    fi
    [ -n "$(toks "$T/cpu.json")" ] && [ "$(toks "$T/cpu.json")" = "$(toks "$T/gpu.json")" ] ||
        { echo "FAIL: $label: tokens $(toks "$T/gpu.json") != $(toks "$T/cpu.json")"; fails=$((fails + 1)); }
}
same "PowerInfer, everything on the device" "$P" dense
same "PowerInfer, predicted, everything on the device" "$P" predicted
same "PowerInfer, a few hot neurons" "$P" dense --vram-budget 0.3445
same "PowerInfer, no hot neurons" "$P" dense --vram-budget 0.3445 --disable-gpu-index
same "dense Q8_0, default" "$D" dense
same "dense Q8_0, -ngl 1" "$D" dense -ngl 1
same "dense Q8_0, -ngl 3" "$D" dense -ngl 3
same "dense Q8_0, batch of 3" "$D" dense -b 3

[ "$fails" -eq 0 ] && echo ok
exit "$fails"
