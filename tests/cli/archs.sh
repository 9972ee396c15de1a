#!/bin/sh
# hearth synth and run for PowerInfer's architectures: each layout the CLI can write
# (defaults per arch, PWRI variants, the Falcon-40B option) loads and generates, inspect
# shows the arch and activation, and flags that do not fit an arch are rejected.
# Usage: archs.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"

S="--n-embd 64 --n-head 4 --n-ff 128 --n-vocab 400"
# name | synth flags | activation inspect must show
while IFS='|' read -r name flags act; do
    expect 0 "wrote" -- "$H" synth -o "$T/$name.gguf" $S $flags
    expect 0 "hearth.ffn_activation = \"$act\"" -- "$H" inspect "$T/$name.gguf"
    # the CPU forward of each layout (auto would take a GPU; the device path: hybrid.sh)
    expect 0 "prompt: " -- "$H" run -m "$T/$name.gguf" -p "hello world" -n 4 --temp 0 --gpu off
done <<EOF2
bamboo|--arch bamboo|drelu
falcon7|--arch falcon --n-head-kv 1|gelu
falcon40|--arch falcon --falcon-40b --n-head-kv 2 --type q8_0|gelu
falconpi|--arch falcon --powerinfer --type f16|relu
opt|--arch opt --type q4_0|relu
optpi|--arch opt --powerinfer --type f16|relu
bamboopi|--arch bamboo --powerinfer --type q4_0|drelu
EOF2
expect 0 "attn_qkv" -- "$H" inspect "$T/falcon40.gguf"
expect 0 "attn_norm_2.bias" -- "$H" inspect "$T/falcon40.gguf"
expect 0 "position_embd.weight" -- "$H" inspect "$T/opt.gguf"
expect 0 "ffn_down_t.bias" -- "$H" inspect "$T/optpi.gguf"
expect 2 "activation gelu is not an FFN of arch llama" -- "$H" synth -o "$T/x.gguf" $S --act gelu
expect 2 "falcon_40b (attn_norm_2) needs an arch that has it" -- "$H" synth -o "$T/x.gguf" $S --falcon-40b
expect 2 "activation must be drelu" -- "$H" synth -o "$T/x.gguf" $S --arch bamboo --act swiglu
expect 0 "bamboo (llama layout" -- "$H" synth --help

[ "$fails" = 0 ] && echo ok
exit "$fails"
