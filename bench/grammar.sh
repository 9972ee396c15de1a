#!/bin/sh
# Cost of grammar-constrained decoding (docs/grammar.md): the same greedy run with and without
# llama.cpp's JSON grammar, on a synthetic model with a 32k-token vocabulary.
#   bench/grammar.sh [HEARTH_BIN] [N_TOKENS]
# Prints decode ms/token for both runs and the grammar's share.
set -eu
bin=${1:-build/hearth}
n=${2:-128}
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" synth -o "$dir/m.gguf" --arch llama --type q8_0 --tokenizer spm --n-vocab 32000 --n-embd 512 \
    --n-layer 8 --n-head 8 --n-ff 1408 --seed 1 >/dev/null
# JSON with strings and numbers that a random model keeps extending (no early end)
cat > "$dir/json.gbnf" <<'G'
root   ::= "[" ws value ("," ws value)* "]"
value  ::= object | string | number
object ::= "{" ws string ":" ws value ws "}"
string ::= "\"" ([^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}))* "\""
number ::= "-"? [0-9]+ ("." [0-9]+)?
ws     ::= [ \t\n]{0,4}
G
cp "$here/tests/conformance/node_modules/node-llama-cpp/llama/grammars/json.gbnf" "$dir/llama-json.gbnf" 2>/dev/null || true
# decode ms/token of a run, and the grammar's own ms/token (--verbose measures it in-process,
# which a shared machine's noise does not blur as it blurs two separate runs)
run() { "$bin" run -m "$dir/m.gguf" -p "Hello" -n "$n" --temp 0 --ignore-eos -t 2 --gpu off -v "$@" 2>&1 >/dev/null |
        sed -n -e 's/.*decode: \([0-9]*\) tokens in [0-9.]* s (\([0-9.]*\) ms\/token.*/decode \1 tokens \2 ms\/token/p' \
               -e 's/.*grammar: \([0-9.]*\) ms\/token.*/grammar \1 ms\/token/p' | tr '\n' ' '; }
echo "plain:                $(run)"
echo "JSON grammar:         $(run --grammar-file "$dir/json.gbnf")"
[ -f "$dir/llama-json.gbnf" ] && echo "llama.cpp json.gbnf:  $(run --grammar-file "$dir/llama-json.gbnf") (ends when the object closes)"
exit 0
