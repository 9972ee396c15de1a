#!/bin/sh
# llama.cpp's -cmoe/--cpu-moe and -ncmoe/--n-cpu-moe N (hearth run, bench): accepted, since
# Hearth keeps every expert on the host; the same greedy tokens with and without them on a
# mixture-of-experts model; bad values of N refused; --help says what they mean here.
# Usage: cpu_moe.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"

M="$T/moe.gguf"
"$H" synth -q -o "$M" --n-expert 4 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 96 --n-vocab 300 --seed 5 >/dev/null 2>&1 ||
    { echo "FAIL: synth --n-expert"; exit 1; }
R="-m $M -p hello -n 6 --temp 0 -t 2 -c 64"

expect 0 "n-cpu-moe N" -- "$H" run --help
expect 0 "experts stay on the host" -- "$H" run --help
expect 0 "cpu-moe" -- "$H" bench --help
expect 2 "out of range" -- "$H" run $R --n-cpu-moe -1
expect 2 "not an integer" -- "$H" run $R -ncmoe some
expect 2 "needs a value" -- "$H" run $R --n-cpu-moe

"$H" run $R >"$T/base" 2>/dev/null || { echo "FAIL: run without the flags"; fails=$((fails + 1)); }
for f in "--cpu-moe" "-cmoe" "--n-cpu-moe 2" "-ncmoe 0" "--n-cpu-moe 99"; do
    # shellcheck disable=SC2086
    if "$H" run $R $f >"$T/with" 2>"$T/err"; then
        cmp -s "$T/base" "$T/with" || { echo "FAIL: $f changed the output"; fails=$((fails + 1)); }
    else
        echo "FAIL: run $f exited non-zero:"; sed 's/^/  /' "$T/err" | head -3; fails=$((fails + 1))
    fi
done
expect 0 "" -- "$H" bench -m "$M" -p 4 -n 2 -r 1 -t 2 --cpu-moe
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cpu_moe: ok"
