#!/bin/sh
# llama.cpp's flags in hearth run and serve (issue 18): accepted spellings and their effect,
# refusals with the reason, the prompt echo, -n counts (-n 80 reports 80, -n -1 runs to the
# context), reverse prompts, -f on a directory, -c past the training context or RAM, the
# sampler's one range (--repeat-penalty 0), --version, progress lines off a terminal.
# Usage: flags.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

M="$T/m.gguf"
"$H" synth -q -o "$M" --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --n-vocab 400 --ctx 128 --seed 3 >/dev/null 2>&1 ||
    { echo "FAIL: synth"; exit 1; }
R="-m $M -t 2 --gpu off --temp 0"

# --version
expect 0 "^hearth [0-9]*\.[0-9]*\.[0-9]*$" -- "$H" --version
expect 0 "^built with .*CUDA backend: \(yes\|no\)" -- "$H" run --version
expect 0 "^hearth [0-9]" -- "$H" serve --version

# The prompt is echoed first, as llama.cpp's completion does; --no-display-prompt leaves it out.
"$H" run $R -p "The cat sat" -n 6 >"$T/echo" 2>/dev/null || fail "run with echo"
"$H" run $R -p "The cat sat" -n 6 --no-display-prompt >"$T/noecho" 2>/dev/null || fail "run without echo"
{ printf 'The cat sat'; cat "$T/noecho"; } | cmp -s - "$T/echo" || fail "stdout is not the prompt followed by the generated text"

# -n N reports N tokens (the first sampled token counted), plus load, ms/token and total time.
expect 0 "decode: 80 tokens in [0-9.]* s ([0-9.]* ms/token, [0-9.]* tok/s) | load [0-9.]* s, total [0-9.]* s" -- \
    "$H" run $R -p "The cat" -n 80 --ignore-eos
# The timing line starts on its own line when stdout and stderr share one pipe.
"$H" run $R -p "The cat" -n 4 >"$T/both" 2>&1
grep -q "^prompt: " "$T/both" || fail "timing line does not start a line when stdout and stderr are one pipe"
# -n -1: until the context is full (-c 32, a 3-token prompt: positions 3..31 evaluated, 30 sampled)
n_prompt=$("$H" tokenize -m "$M" -p "The cat" --ids | wc -w)
want=$((32 - n_prompt + 1))
expect 0 "decode: $want tokens" -- "$H" run $R -p "The cat" -n -1 -c 32 --ignore-eos
grep -q "context full (32 tokens)" "$T/out" || fail "-n -1: no 'context full' line"
expect 0 "decode: " -- "$H" run $R -p "The cat" --n-predict -2 -c 32 --ignore-eos
# -s is --seed; --seed -1 means a random seed (llama.cpp's)
"$H" run -m "$M" -t 2 --gpu off -p "The cat" -n 12 --temp 1 -s 5 --no-display-prompt >"$T/s1" 2>/dev/null
"$H" run -m "$M" -t 2 --gpu off -p "The cat" -n 12 --temp 1 --seed 5 --no-display-prompt >"$T/s2" 2>/dev/null
cmp -s "$T/s1" "$T/s2" || fail "-s 5 and --seed 5 differ"
expect 0 "decode: " -- "$H" run $R -p "The cat" -n 2 --seed -1

# -r: generation stops before the reverse prompt; it is not printed. Pick a piece of the
# greedy output as the stop text.
"$H" run $R -p "The cat" -n 24 --ignore-eos --no-display-prompt >"$T/full" 2>/dev/null
stop=$(head -c 12 "$T/full" | tail -c 3)
if [ -n "$(printf '%s' "$stop" | tr -d ' \n')" ]; then
    "$H" run $R -p "The cat" -n 24 --ignore-eos --no-display-prompt -r "$stop" -r "zzqqxx" >"$T/cut" 2>/dev/null || fail "-r run"
    cut=$(cat "$T/cut")
    case "$cut" in *"$stop"*) fail "-r: the stop text '$stop' was printed: '$cut'" ;; esac
    full=$(cat "$T/full")
    case "$full" in "$cut"*) ;; *) fail "-r: output '$cut' is not a prefix of '$full'" ;; esac
    [ "${#cut}" -lt "${#full}" ] || fail "-r: did not stop early"
fi
expect 2 "reverse prompt is empty" -- "$H" run $R -p hi -r ""

# Accepted llama.cpp spellings
expect 0 "decode: " -- "$H" run $R -p hi -n 2 -fa
expect 0 "decode: " -- "$H" run $R -p hi -n 2 -fa off
expect 0 "decode: " -- "$H" run $R -p hi -n 2 --flash-attn auto --no-mmap --mlock --no-warmup
expect 0 "decode: " -- "$H" run $R -p hi -n 2 -ub 64 -b 128 --temperature 0 --predict 2
expect 0 "one pool of 2 threads" -- "$H" run $R -p hi -n 2 -tb 4
expect 0 "decode: " -- "$H" run $R -p hi -n 2 -ngl 0
expect 0 "decode: " -- "$H" run $R -p hi -n 2 -ngl auto
expect 2 "contradicts --gpu standin" -- "$H" run -m "$M" -p hi -ngl 0 --gpu standin
expect 2 "contradicts --gpu cuda" -- "$H" run -m "$M" -p hi --gpu cuda -ngl 0

# Refused with the reason
expect 2 "--rope-scaling: read from the file in Hearth" -- "$H" run $R -p hi --rope-scaling yarn
expect 2 "--rope-freq-base: read from the file" -- "$H" run $R -p hi --rope-freq-base 10000
expect 2 "-ts: Hearth uses one GPU" -- "$H" run $R -p hi -ts 1,1
expect 2 "--mirostat: Hearth samples with" -- "$H" run $R -p hi --mirostat 2
expect 2 "-hf: Hearth does not download models" -- "$H" run -hf org/model -p hi
expect 2 "--jinja: Hearth renders chat templates by family" -- "$H" serve -m "$M" --jinja
expect 2 "-nocb: the slots are always decoded in one batch" -- "$H" serve -m "$M" -nocb
expect 2 "--numa: " -- "$H" chat -m "$M" --numa distribute
expect 2 "-sys needs a chat: add -cnv" -- "$H" run $R -p hi -sys "be brief"
expect 2 "--no-history needs a chat: add -cnv" -- "$H" run $R -p hi --no-history
expect 2 "--history-file needs a chat: add -cnv" -- "$H" run $R -p hi --history-file /tmp/x
expect 0 "--history-file FILE, --no-history" -- "$H" run --help
expect 0 "--no-history " -- "$H" chat --help
expect 2 "--history-file: the path is empty" -- "$H" chat -m "$M" --history-file ""
expect 2 "--dump is for plain completion" -- "$H" run $R -cnv --dump "$T/cnv.json"
expect 2 "--dump is for plain completion" -- "$H" run $R --dump "$T/d.json" -i

# The sampler's one range, with the flag's name
expect 2 "--repeat-penalty: 0 is out of range (0, 100\]" -- "$H" run $R -p hi --repeat-penalty 0
expect 2 "--repeat-penalty: " -- "$H" chat -m "$M" --repeat-penalty 0
expect 2 "--top-p: 1.5 is out of range" -- "$H" run $R -p hi --top-p 1.5
expect 0 "decode: " -- "$H" run $R -p hi -n 2 --repeat-penalty 1.3

# -i / -cnv is hearth chat: a message on stdin gets a reply; -sys is its system message.
printf 'In the beginning\n' | "$H" run -m "$M" -t 2 --gpu off --temp 0 -n 4 -cnv -sys "Be brief." >"$T/cnv" 2>"$T/cnv.err" ||
    fail "run -cnv: $(cat "$T/cnv.err")"
printf 'In the beginning\n' | "$H" chat -m "$M" -t 2 --gpu off --temp 0 -n 4 --system "Be brief." >"$T/chat" 2>/dev/null
cmp -s "$T/cnv" "$T/chat" || fail "run -cnv differs from hearth chat with the same flags"
printf 'In the beginning\n' | "$H" run -m "$M" -t 2 --gpu off --temp 0 -n 4 -i >/dev/null 2>&1 || fail "run -i"
# -p with -cnv is the chat's first message (hearth chat -p), -r its reverse prompts
"$H" run -m "$M" -t 2 --gpu off --temp 0 -n 6 -cnv -p "And God said" -r "zzqq" </dev/null >"$T/cnvp" 2>"$T/cnvp.err" ||
    fail "run -cnv -p: $(cat "$T/cnvp.err")"
"$H" chat -m "$M" -t 2 --gpu off --temp 0 -n 6 -p "And God said" -r "zzqq" </dev/null >"$T/chatp" 2>/dev/null
[ -s "$T/cnvp" ] && cmp -s "$T/cnvp" "$T/chatp" || fail "run -cnv -p differs from hearth chat -p (or printed nothing)"
# ... and so is -f's text, as in llama-cli
printf 'And God said' >"$T/cnvf.txt"
"$H" run -m "$M" -t 2 --gpu off --temp 0 -n 6 -cnv -f "$T/cnvf.txt" -r "zzqq" </dev/null >"$T/cnvf" 2>"$T/cnvf.err" ||
    fail "run -cnv -f: $(cat "$T/cnvf.err")"
cmp -s "$T/cnvf" "$T/chatp" || fail "run -cnv -f differs from hearth chat -p with the file's text"

# -f on a directory is an error, not an empty prompt
expect 1 "'$T' is a directory" -- "$H" run $R -f "$T"

# -c: past the training context a warning with the numbers; the KV cache beyond RAM an error
expect 0 "warning: -c 512 is more than the model was trained for (128 tokens)" -- "$H" run $R -p hi -n 1 -c 512
ram_kib=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo 2>/dev/null)
if [ -n "$ram_kib" ] && [ "$ram_kib" -lt 60000000 ]; then
    # 2 layers x 64 x (2 + 2) bytes = 512 bytes per token: 2^24 tokens = 8 GiB per sequence;
    # serve with 16 slots of 2^24 / 16... use run on a wider model instead
    W="$T/w.gguf"
    "$H" synth -q -o "$W" --n-embd 1024 --n-layer 4 --n-head 8 --n-ff 64 --n-vocab 300 >/dev/null 2>&1 || fail "synth wide"
    # 2^24 tokens x 4 layers x 1024 x 4 bytes = 256 GiB
    expect 1 "the KV cache of 1 x 16777216 tokens needs 256.00 GiB .* but this machine has" -- \
        "$H" run -m "$W" -t 2 --gpu off -p hi -n 1 -c 16777216
    grep -q "warning: -c 16777216 is more than" "$T/out" || fail "-c past RAM: no training-context warning"
fi
# serve: -c is the total over the slots
expect 2 "-c 8 split over 2 slots leaves fewer than 8 tokens each" -- timeout 20 "$H" serve -m "$M" -np 2 -c 8
expect 0 "-c N is the total context, split evenly over the -np slots" -- "$H" serve --help

# Progress off a terminal: plain lines, no carriage returns
"$H" synth -o "$T/big.gguf" --n-embd 512 --n-layer 5 --n-ff 2048 --n-vocab 1000 >/dev/null 2>"$T/prog"
if [ -s "$T/prog" ]; then
    grep -q "$(printf '\r')" "$T/prog" && fail "progress written with carriage returns to a file"
    [ "$(grep -c '^hearth synth: generated' "$T/prog")" -ge 3 ] || fail "progress: want a line per step, got: $(cat "$T/prog")"
    [ "$(grep -c '^hearth synth: generated' "$T/prog")" -le 12 ] || fail "progress: more than one line per 10%"
else
    fail "synth of an 80 MiB model printed no progress"
fi
rm -f "$T/big.gguf"

[ "$fails" = 0 ] && echo "ok" || { echo "$fails failure(s)"; exit 1; }
