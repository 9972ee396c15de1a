#!/bin/sh
# `hearth inspect` on files written by Hearth's GGUF writer (the fuzzing seeds, which
# tests/formats/test_gguf_corpus.c regenerates and compares), and its failures.
# usage: inspect.sh HEARTH_BINARY SOURCE_DIR
set -u
. "$(dirname "$0")/check.sh"
SRC=$2
SEED=$SRC/fuzz/corpus/gguf/basic

expect 0 "inspect basic" -- "$HEARTH" inspect "$SEED"
for s in 'magic GGUF, version 3, alignment 32' 'general.architecture = "llama"' \
         'general.name = "tiny \"quoted\"\n model"' 'llama.context_length = 128' \
         'tokenizer.ggml.tokens (12) = ["<unk>", "<s>"' '... (12 items)]' \
         'blk.0.attn_q.weight  q8_0  [32, 4]  offset 768  bytes 136' 'output_norm.weight' \
         'total: 4 tensors, 672 elements, 1104 bytes' 'types:' \
         '  f16        1 tensors           768 bytes   69.6%  16.000 bits/weight' \
         '  q4_0       1 tensors            72 bytes    6.5%   4.500 bits/weight'; do
    has out "$s"
done

expect 0 "inspect --all" -- "$HEARTH" inspect --all "$SEED"
has out '"g", "h"]'

expect 0 "inspect sparse" -- "$HEARTH" inspect "$SRC/fuzz/corpus/gguf/sparse"
has out 'magic PWRI'
has out 'split.vram_capacity = 123456789012'

expect 0 "inspect --json" -- "$HEARTH" inspect --json "$SEED"
has out '"n_tensors": 4'
has out '{"name": "blk.0.ffn_up.weight", "type": "q4_0", "type_id": 2, "shape": [32, 4]'
has out '{"type": "q4_0", "type_id": 2, "tensors": 1, "elements": 128, "bytes": 72, "bits_per_weight": 4.5000}'
if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool "$TMP/out" >/dev/null || bad "--json output is not valid JSON"
fi

# Truncated in the header area and inside the tensor data.
head -c 100 "$SEED" >"$TMP/t1.gguf"
expect 1 "truncated header" -- "$HEARTH" inspect "$TMP/t1.gguf"
has err "hearth inspect: $TMP/t1.gguf: header claims 11 KV pairs"
head -c 500 "$SEED" >"$TMP/t0.gguf"
expect 1 "truncated key" -- "$HEARTH" inspect "$TMP/t0.gguf"
has err "hearth inspect: $TMP/t0.gguf: KV 8: truncated file: key at offset 494 needs 8 bytes, only 6 left"
head -c 1000 "$SEED" >"$TMP/t2.gguf"
expect 1 "truncated data" -- "$HEARTH" inspect "$TMP/t2.gguf"
has err "tensor 'token_embd.weight': data [offset 0, 768 bytes] extends past end of file"
printf 'NOTGGUF-NOTGGUF-NOTGGUF-' >"$TMP/t3.gguf"
expect 1 "bad magic" -- "$HEARTH" inspect "$TMP/t3.gguf"
has err "bad magic"
expect 1 "missing file" -- "$HEARTH" inspect "$TMP/none.gguf"
has err "cannot open"

expect 2 "unknown flag" -- "$HEARTH" inspect --bogus "$SEED"
has err "unknown flag '--bogus'"
expect 2 "no file" -- "$HEARTH" inspect
expect 2 "two files" -- "$HEARTH" inspect "$SEED" "$SEED"
expect 0 "help" -- "$HEARTH" inspect --help
has out "usage: hearth inspect"

[ $fail -eq 0 ] && echo ok
exit $fail
