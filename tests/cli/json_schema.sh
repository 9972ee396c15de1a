#!/bin/sh
# hearth run --json-schema (issue 19): a bad schema fails before the model loads with the
# converter's message; sampled output (greedy and several seeds) is JSON valid under the
# schema, checked by python3's json module against the schema's own constraints.
# Usage: json_schema.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

M="$T/m.gguf"
"$H" synth -q -o "$M" --n-embd 64 --n-layer 2 --n-head 4 --n-ff 128 --n-vocab 400 --ctx 512 --seed 3 >/dev/null 2>&1 ||
    { echo "FAIL: synth"; exit 1; }
R="-m $M -t 2 --gpu off --no-display-prompt -p {"

expect 2 "json schema: 'pattern' is not supported" -- "$H" run -m /nonexistent -p x -j '{"type":"string","pattern":"a"}'
expect 2 "json schema: invalid JSON at line 1, column 9" -- "$H" run -m /nonexistent -p x --json-schema '{"type" 1}'
expect 2 "give one of --grammar, --grammar-file, --json-schema" -- "$H" run -m /nonexistent -p x -j '{}' --grammar 'root ::= "a"'
expect 2 "json schema: cannot read '/nonexistent.json'" -- "$H" run -m /nonexistent -p x -jf /nonexistent.json

S='{"type":"object","properties":{"color":{"enum":["red","green"]},"n":{"type":"integer","minimum":-5,"maximum":20},"tags":{"type":"array","items":{"type":"string","maxLength":4},"maxItems":2},"ok":{"type":"boolean"}},"required":["color","n","ok"]}'
printf '%s' "$S" >"$T/s.json"
"$H" run $R -n 600 --temp 0 -j "$S" >"$T/o0" 2>/dev/null || fail "greedy run under a schema"
"$H" run $R -n 600 --temp 0 -j "@$T/s.json" >"$T/o1" 2>/dev/null || fail "run with -j @FILE"
"$H" run $R -n 600 --temp 0 -jf "$T/s.json" >"$T/o2" 2>/dev/null || fail "run with -jf FILE"
cmp -s "$T/o0" "$T/o1" && cmp -s "$T/o0" "$T/o2" || fail "-j TEXT, -j @FILE and -jf FILE differ"
for s in 1 2 3 4 5; do
    "$H" run $R -n 600 --temp 1.5 --top-k 0 --top-p 1 --min-p 0 -s $s -j "$S" >"$T/o$s" 2>/dev/null || fail "seed $s run"
done
if command -v python3 >/dev/null 2>&1; then
    for f in "$T"/o0 "$T"/o1 "$T"/o2 "$T"/o3 "$T"/o4 "$T"/o5; do
        python3 - "$f" <<'PY' || fail "output $f is not valid under the schema: $(head -c 300 "$f")"
import json, sys
t = open(sys.argv[1], encoding="utf-8").read()
v = json.loads(t)
assert list(v)[:3] == ["color", "n", "ok"], v  # required first, in order
assert set(v) - {"tags"} == {"color", "n", "ok"}, v
assert v["color"] in ("red", "green") and isinstance(v["n"], int) and -5 <= v["n"] <= 20, v
assert isinstance(v["ok"], bool), v
assert all(isinstance(x, str) and len(x) <= 4 for x in v.get("tags", [])) and len(v.get("tags", [])) <= 2, v
PY
    done
else
    echo "json_schema.sh: no python3, outputs not validated"
fi
[ "$fails" = 0 ] && echo ok
exit "$fails"
