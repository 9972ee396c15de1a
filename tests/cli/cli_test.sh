#!/bin/sh
# Behaviour of the hearth command: exit codes and messages for bad flags and bad files,
# and end-to-end runs on a small synthetic model.
# Usage: cli_test.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"

M="$T/m.gguf"
"$H" synth -o "$M" --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --n-vocab 400 --seed 3 >/dev/null 2>&1 || { echo "FAIL: synth"; exit 1; }

expect 2 "usage" -- "$H"
expect 2 "unknown command 'frobnicate'" -- "$H" frobnicate
expect 0 "commands:" -- "$H" --help
expect 0 "usage: hearth run" -- "$H" run --help
expect 2 "a model is required" -- "$H" run -p hi
expect 2 "a prompt is required" -- "$H" run -m "$M"
expect 2 "unknown flag '--bogus'" -- "$H" run -m "$M" -p hi --bogus
expect 2 "'abc' is not an integer" -- "$H" run -m "$M" -p hi -n abc
expect 2 "out of range" -- "$H" run -m "$M" -p hi --temp -1
expect 2 "out of range" -- "$H" run -m "$M" -p hi -t 0
expect 2 "needs a value" -- "$H" run -m "$M" -p hi -t
expect 2 "cache type 'q9'" -- "$H" run -m "$M" -p hi -ctk q9
expect 2 "not a number" -- "$H" run -m "$M" -p hi --top-p x
expect 1 "/nonexistent.gguf" -- "$H" run -m /nonexistent.gguf -p hi
printf 'not a gguf file at all' >"$T/garbage.gguf"
expect 1 "garbage.gguf" -- "$H" run -m "$T/garbage.gguf" -p hi
head -c 3000 "$M" >"$T/trunc.gguf"
expect 1 "trunc.gguf" -- "$H" run -m "$T/trunc.gguf" -p hi
long=$(printf 'word %.0s' $(seq 1 200))
expect 1 "context holds 32" -- "$H" run -m "$M" -p "$long" -c 32
expect 1 "-f: cannot read '$T/none.txt'" -- "$H" run -m "$M" -f "$T/none.txt"
expect 1 "--ffn-act 'bogus' is unknown" -- "$H" run -m "$M" -p hi --ffn-act bogus
expect 2 "--ffn-act needs a value" -- "$H" run -m "$M" -p hi --ffn-act

# End to end on the CPU (--gpu off: auto would take a GPU where there is one, and the
# thread-count invariance below is the CPU path's): greedy output is reproducible; stats
# go to stderr.
C="--gpu off"
expect 0 "decode: " -- "$H" run -m "$M" -p "The cat sat" -n 16 --temp 0 -t 2 $C
"$H" run -m "$M" -p "The cat sat" -n 16 --temp 0 -t 2 $C 2>/dev/null >"$T/a"
"$H" run -m "$M" -p "The cat sat" -n 16 --temp 0 -t 1 $C 2>/dev/null >"$T/b"
cmp -s "$T/a" "$T/b" || { echo "FAIL: greedy output differs between runs/thread counts"; fails=$((fails + 1)); }
"$H" run -m "$M" -p "The cat sat" -n 24 --temp 1 --seed 5 $C 2>/dev/null >"$T/s1"
"$H" run -m "$M" -p "The cat sat" -n 24 --temp 1 --seed 5 $C 2>/dev/null >"$T/s2"
cmp -s "$T/s1" "$T/s2" || { echo "FAIL: same seed gave different text"; fails=$((fails + 1)); }
expect 0 "KV cache" -- "$H" run -m "$M" -p "hi" -n 2 --verbose $C
"$H" run -m "$M" -p "The cat" -n 5 --temp 0 --ignore-eos --dump "$T/d.json" $C >/dev/null 2>&1
n=$(grep -o '"token":' "$T/d.json" | wc -l)
[ "$n" = 5 ] || { echo "FAIL: --dump wrote $n steps, want 5"; fails=$((fails + 1)); }

# --force-tokens: forcing the model's own greedy picks changes nothing; forcing others
# changes every later step but not the first (its logits come before any forced token).
toks=$(grep -o '"token": *[0-9]*' "$T/d.json" | grep -o '[0-9]*$' | tr '\n' ' ')
"$H" run -m "$M" -p "The cat" -n 5 --temp 0 --ignore-eos --dump "$T/f.json" --force-tokens "$toks" $C >/dev/null 2>&1
cmp -s "$T/d.json" "$T/f.json" || { echo "FAIL: forcing the greedy tokens changed the dump"; fails=$((fails + 1)); }
"$H" run -m "$M" -p "The cat" -n 5 --temp 0 --ignore-eos --dump "$T/g.json" --force-tokens "9 9 9 9" $C >/dev/null 2>&1
first() { sed -n "$2p" "$1"; } # the dump has one line per step after the header line
[ "$(first "$T/d.json" 2)" = "$(first "$T/g.json" 2)" ] || { echo "FAIL: forcing changed step 0"; fails=$((fails + 1)); }
[ "$(first "$T/d.json" 3)" != "$(first "$T/g.json" 3)" ] || { echo "FAIL: forced tokens were not fed"; fails=$((fails + 1)); }
expect 1 "--force-tokens: 'x' is not a token id in .0, 400)" -- "$H" run -m "$M" -p hi -n 2 --force-tokens "1 x" $C
expect 1 "--force-tokens: '400' is not a token id" -- "$H" run -m "$M" -p hi -n 2 --force-tokens "400" $C
expect 2 "--force-tokens needs a value" -- "$H" run -m "$M" -p hi --force-tokens

# perplexity
for i in $(seq 1 60); do echo "The quick brown fox jumps over the lazy dog number $i."; done >"$T/text.txt"
expect 0 "Final estimate: PPL" -- "$H" perplexity -m "$M" -f "$T/text.txt" -c 64 $C
expect 1 "need at least" -- "$H" perplexity -m "$M" -f "$T/text.txt" -c 4096
expect 2 "a text file is required" -- "$H" perplexity -m "$M"

[ "$fails" = 0 ] && echo "ok" || { echo "$fails failure(s)"; exit 1; }
