#!/bin/sh
# hearth chat on the shipped model (KJV text, no chat template, so ChatML), greedy:
# - two turns give two replies, and the second equals what `hearth run` generates from the
#   fully rendered two-turn prompt evaluated from scratch (the chat evaluates only what the
#   KV cache lacks); the rendered prompt is checked against ChatML written out here;
# - -p and -f, -sysf, /reset, /exit, continued lines and """ blocks, --system, /save and /load, bad commands, a
#   forced template, dropped turns when the context fills (also a long chat at the model's own
#   context), a message too long for the context, and flag errors.
# The terminal side (line editor, Ctrl-C, colour) is tests/cli/chat_tty.py.
# Environment: HEARTH_BIN (the hearth binary), HEARTH_SRC (the source tree).
set -u
H="$HEARTH_BIN"
M="$HEARTH_SRC/models/bible-drelu.gguf"
. "$HEARTH_SRC/tests/cli/expect.sh"

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# chat NAME INPUT FLAGS...: runs a greedy chat on INPUT; NAME.out, NAME.err, NAME.prompt (the
# last rendered prompt) under $T; returns the exit status. On the CPU (--gpu off, here and
# for hearth run): replies are compared as text, which only the CPU path promises to match
# between a reused cache and a prompt evaluated from scratch; auto would take a GPU.
chat() {
    name=$1 input=$2
    shift 2
    printf '%s' "$input" | "$H" chat -m "$M" --temp 0 -n 16 -t 2 --gpu off --verbose --dump-prompt "$T/$name.prompt" "$@" \
        >"$T/$name.out" 2>"$T/$name.err"
}
replies() { grep -c '| reply: ' "$T/$1.err"; }
# ends_with FILE SUFFIXFILE: FILE's last bytes are SUFFIXFILE's.
ends_with() {
    n=$(wc -c <"$2")
    tail -c "$n" "$1" | cmp -s - "$2"
}

# Two turns, against hearth run on the rendered prompt.
chat two 'In the beginning
And the earth
' || fail "two turns: exit status $?"
[ "$(replies two)" = 2 ] || fail "two turns: $(replies two) replies, want 2"
grep -q "no chat template; using chatml" "$T/two.err" || fail "two turns: no notice about the missing template"
grep '| reply: ' "$T/two.err" | sed -n 2p | grep -q ', 0 reused' && fail "two turns: nothing reused from the cache"
"$H" run -m "$M" -f "$T/two.prompt" --temp 0 -n 16 -t 2 --gpu off --no-display-prompt >"$T/run.out" 2>"$T/run.err" || fail "run: $(cat "$T/run.err")"
[ -s "$T/run.out" ] || fail "run printed nothing"
ends_with "$T/two.out" "$T/run.out" ||
    { fail "second reply differs from hearth run on the same prompt"; sed 's/^/  chat: /' "$T/two.out"; sed 's/^/  run: /' "$T/run.out"; }
# The chat's stdout is reply1 \n reply2 \n; the prompt is ChatML around reply1.
n1=$(($(wc -c <"$T/two.out") - $(wc -c <"$T/run.out") - 1))
head -c "$n1" "$T/two.out" >"$T/reply1"
{
    printf '<|im_start|>user\nIn the beginning<|im_end|>\n<|im_start|>assistant\n'
    cat "$T/reply1"
    printf '<|im_end|>\n<|im_start|>user\nAnd the earth<|im_end|>\n<|im_start|>assistant\n'
} >"$T/want.prompt"
cmp -s "$T/two.prompt" "$T/want.prompt" || fail "rendered two-turn prompt is not the expected ChatML"

# Piped: no prompt, no banner, no escape sequences (no colour, no line editor).
grep -q "$(printf '\033')" "$T/two.out" "$T/two.err" && fail "piped chat: escape sequences in the output"
grep -q '/help for commands' "$T/two.err" && fail "piped chat: printed the banner"

# -p sends a first message before the input: the same reply as typing it; -r ends replies at
# a text (not printed), so the reply is the start of the one without -r.
chat first '' -p 'In the beginning' || fail "-p: exit status $?"
{ cat "$T/reply1"; echo; } | cmp -s - "$T/first.out" || fail "-p: not the reply to the same first message"
# -f and -sysf: the first message and the system message from files, as llama-cli's.
printf 'In the beginning' >"$T/first.txt"
printf 'Answer briefly.' >"$T/sys.txt"
chat ffile '' -f "$T/first.txt" -sysf "$T/sys.txt" || fail "-f/-sysf: exit status $?"
printf '<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\nIn the beginning<|im_end|>\n<|im_start|>assistant\n' |
    cmp -s - "$T/ffile.prompt" || fail "-f/-sysf: the prompt is not the files' system and user messages: $(cat "$T/ffile.prompt")"
chat rev '' -p 'In the beginning' -r king -r 'no such text' || fail "-r: exit status $?"
grep -q king "$T/rev.out" && fail "-r king: the reply goes past 'king'"
head -c "$(($(wc -c <"$T/rev.out") - 1))" "$T/rev.out" >"$T/rev.text"
[ -s "$T/rev.text" ] && head -c "$(wc -c <"$T/rev.text")" "$T/reply1" | cmp -s - "$T/rev.text" ||
    fail "-r king: the reply is not the start of the reply without -r"
grep -q king "$T/reply1" || fail "-r: the reply without -r has no 'king' (the check above proves nothing)"

# /reset: the next turn is answered as in a new chat (same reply, same prompt).
chat reset 'In the beginning
/reset
And the earth
' || fail "/reset: exit status $?"
chat fresh 'And the earth
' || fail "fresh: exit status $?"
[ "$(replies reset)" = 2 ] || fail "/reset: $(replies reset) replies, want 2"
cmp -s "$T/reset.prompt" "$T/fresh.prompt" || fail "/reset: the prompt after /reset still holds the old turn"
ends_with "$T/reset.out" "$T/fresh.out" || fail "/reset: reply differs from a new chat's"

# /exit ends the chat; EOF ends it too (exit 0 both).
chat exit 'In the beginning
/exit
And the earth
' || fail "/exit: exit status $?"
[ "$(replies exit)" = 1 ] || fail "/exit: $(replies exit) replies, want 1"
chat empty '' || fail "empty input: exit status $?"
[ -s "$T/empty.out" ] && fail "empty input printed a reply"

# A line ending in '\' continues the message; --system comes first.
chat cont 'In the\
beginning
' --system 'Answer in verse.' || fail "continued line: exit status $?"
printf '<|im_start|>system\nAnswer in verse.<|im_end|>\n<|im_start|>user\nIn the\nbeginning<|im_end|>\n<|im_start|>assistant\n' >"$T/want.prompt"
cmp -s "$T/cont.prompt" "$T/want.prompt" || fail "continued line / --system: unexpected prompt"

# A block between """ lines is one message, as the continued line above; -sys is --system.
chat block '"""
In the
beginning
"""
' -sys 'Answer in verse.' || fail '""" block: exit status $?'
cmp -s "$T/block.prompt" "$T/want.prompt" || fail '""" block / -sys: unexpected prompt'

# /save writes the conversation as JSON (checked with python3's json module); /load of it in a
# new chat continues the same conversation: the same next reply, and /save writes the same file.
chat save 'In the beginning
/save '"$T/conv.json"'
' || fail "/save: exit status $?"
grep -q "saved 2 messages to" "$T/save.err" || fail "/save: no confirmation"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["messages"]
want = [("user", "In the beginning"), ("assistant", open(sys.argv[2]).read())]
sys.exit(0 if [(x["role"], x["content"]) for x in m] == want else 1)' "$T/conv.json" "$T/reply1" ||
        fail "/save: the JSON does not hold the conversation"
fi
chat load '/load '"$T/conv.json"'
/save '"$T/conv2.json"'
And the earth
' || fail "/load: exit status $?"
grep -q "loaded 2 messages from" "$T/load.err" || fail "/load: no confirmation"
cmp -s "$T/conv.json" "$T/conv2.json" || fail "/save after /load: a different file"
cmp -s "$T/load.prompt" "$T/two.prompt" || fail "/load: the next prompt is not the saved conversation's"
ends_with "$T/two.out" "$T/load.out" || fail "/load: the next reply differs from the original chat's"
chat loadbad '/load '"$T/nonexistent.json"'
/load
/bogus
//etc is a path
In the beginning
' || fail "bad commands: exit status $?"
grep -q "/load: cannot read '$T/nonexistent.json'" "$T/loadbad.err" || fail "/load of a missing file: no message"
grep -q "/load needs a file name" "$T/loadbad.err" || fail "/load without a file: no message"
grep -q "unknown command '/bogus'" "$T/loadbad.err" || fail "/bogus: no message"
[ "$(replies loadbad)" = 2 ] || fail "bad commands: $(replies loadbad) replies, want 2 ('//' sends text)"
grep -q '<|im_start|>user\n/etc is a path' "$T/loadbad.prompt" 2>/dev/null ||
    grep -q '^/etc is a path' "$T/loadbad.prompt" || fail "'//' did not send the text with one '/'"
chat helpcmd '/help
' || fail "/help: exit status $?"
grep -q '/save FILE' "$T/helpcmd.err" || fail "/help does not list /save"

# A forced template: no notice, the family's format.
chat forced 'And God said
' --chat-template mistral || fail "--chat-template mistral: exit status $?"
grep -q "no chat template" "$T/forced.err" && fail "--chat-template: still printed the detection notice"
printf '[INST] And God said [/INST]' >"$T/want.prompt"
cmp -s "$T/forced.prompt" "$T/want.prompt" || fail "--chat-template mistral: unexpected prompt"
# A newer family by name, with --system folded into the first user turn (Gemma has no
# system turn); an alias selects its family.
chat gemma 'And God said
' --chat-template gemma --system 'Be brief.' || fail "--chat-template gemma: exit status $?"
printf '<start_of_turn>user\nBe brief.\n\nAnd God said<end_of_turn>\n<start_of_turn>model\n' >"$T/want.prompt"
cmp -s "$T/gemma.prompt" "$T/want.prompt" || fail "--chat-template gemma: unexpected prompt"
chat alias 'And God said
' --chat-template granite-4.0 || fail "--chat-template granite-4.0: exit status $?"
grep -q 'template granite,' "$T/alias.err" || fail "--chat-template granite-4.0: not the granite family"

# A small context: the first two turns fit (40 and 100 tokens), the third does not; the
# oldest turn goes, the notice says so once with the count, and every message gets a reply.
chat small 'In the beginning
And the earth
And God said
' -c 128 || fail "-c 128: exit status $?"
[ "$(replies small)" = 3 ] || fail "-c 128: $(replies small) replies, want 3"
[ "$(grep -c 'context full: dropped the oldest 2 messages' "$T/small.err")" = 1 ] || fail "-c 128: want one notice about 2 dropped messages"
grep -q 'In the beginning' "$T/small.prompt" && fail "-c 128: the oldest turn was not dropped"
grep -q 'And God said' "$T/small.prompt" || fail "-c 128: the newest message is missing"

# The shipped model's own context (256 tokens) and the default reply length: replies stop where
# the context ends instead of failing, later turns drop the oldest messages (one notice), and a
# long chat keeps going.
printf 'In the beginning\nAnd the earth\nAnd God said\n' |
    "$H" chat -m "$M" --temp 0 -t 2 --gpu off --verbose >"$T/long3.out" 2>"$T/long3.err" || fail "3 turns: exit status $?"
[ "$(replies long3)" = 3 ] || fail "3 turns at the model's context: $(replies long3) replies, want 3"
grep -q 'context full (' "$T/long3.err" && fail "3 turns: a reply was cut by a full context"
[ "$(grep -c 'dropped the oldest .*later drops are not announced' "$T/long3.err")" = 1 ] || fail "3 turns: want one first notice about dropped messages"
grep -q 'context 256 tokens' "$T/long3.err" || fail "3 turns: not the model's 256-token context"

# A message longer than the context is reported and skipped; the next one is answered.
long=$(printf 'and the earth was without form %.0s' 1 2 3 4 5 6)
chat long "$long
x
" -c 48 || fail "long message: exit status $?"
grep -q 'message does not fit the context' "$T/long.err" || fail "long message: no notice"
[ "$(replies long)" = 1 ] || fail "long message: $(replies long) replies, want 1 (for the next line)"

# A grammar constrains every reply, from its start each turn (the matcher is reset per reply).
chat gram 'In the beginning
And the earth
' --grammar 'root ::= ("Yea" | "Nay") " " [a-z]+ "."' || fail "grammar: exit status $?"
[ "$(replies gram)" = 2 ] || fail "grammar: $(replies gram) replies, want 2"
[ "$(grep -c -E '^(Yea|Nay) [a-z]+\.$' "$T/gram.out")" = 2 ] || fail "grammar: replies outside the grammar: $(cat "$T/gram.out")"
expect 1 "grammar:1:10: unclosed '(' (missing ')')" -- "$H" chat -m "$M" --grammar 'root ::= ('

# Flags.
expect 0 "usage: hearth chat" -- "$H" chat --help
expect 0 "--chat-template" -- "$H" chat --help
expect 2 "a model is required" -- "$H" chat
expect 2 "unknown template 'qwen' (chatml, llama2, llama3, mistral, falcon, phi3, phi4, gemma," -- "$H" chat -m "$M" --chat-template qwen
for name in gemma phi3 phi4 deepseek3 mistral-v7 mistral-v3-tekken command-r; do
    expect 0 "$name" -- "$H" chat --help
done
expect 2 "unknown flag '--bogus'" -- "$H" chat -m "$M" --bogus
expect 2 "needs a value" -- "$H" chat -m "$M" --system
expect 2 "-r: the text is empty" -- "$H" chat -m "$M" -r ''
expect 2 "give either -p or -f, not both" -- "$H" chat -m "$M" -p x -f "$T/first.txt"
expect 1 "-sysf: cannot read '$T/none.txt'" -- "$H" chat -m "$M" -sysf "$T/none.txt"
expect 0 "--reverse-prompt TEXT" -- "$H" chat --help
expect 2 "'many' is not an integer" -- "$H" chat -m "$M" -n many
expect 1 "/nonexistent.gguf" -- "$H" chat -m /nonexistent.gguf

[ "$fails" = 0 ] && echo "ok" || { echo "$fails failure(s)"; exit 1; }
