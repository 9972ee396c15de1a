#!/bin/sh
# llama.cpp's -cmoe/--cpu-moe and -ncmoe/--n-cpu-moe N (hearth run, bench): the same greedy
# tokens with and without them on a mixture-of-experts model, on the CPU and on the stand-in
# device, where they decide which layers' experts may go to the device (--verbose counts
# them; -ngl N limits them to layers 0..N-1); bad values of N refused; --help says what they mean.
# Usage: cpu_moe.sh HEARTH_BIN
set -u
H="$1"
. "$(dirname "$0")/expect.sh"

M="$T/moe.gguf"
"$H" synth -q -o "$M" --n-expert 4 --n-embd 64 --n-layer 2 --n-head 4 --n-ff 96 --n-vocab 300 --seed 5 >/dev/null 2>&1 ||
    { echo "FAIL: synth --n-expert"; exit 1; }
R="-m $M -p hello -n 6 --temp 0 -t 2 -c 64"
"$H" synth -q -o "$T/dense.gguf" --n-embd 64 --n-layer 1 --n-head 4 --n-ff 96 --n-vocab 300 >/dev/null 2>&1

expect 0 "n-cpu-moe N" -- "$H" run --help
expect 0 "keep the experts of the first N layers on the CPU" -- "$H" run --help
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
# the stand-in: 2 layers x 4 experts; same tokens whichever side computes each expert
for c in "--cpu-moe:0 of 8 experts" ":8 of 8 experts" "--n-cpu-moe 1:4 of 8 experts" "-ngl 1:4 of 8 experts" \
         "-ngl 2 -ncmoe 1:4 of 8 experts" "-ngl 3 --n-cpu-moe 2:0 of 8 experts"; do
    f="${c%%:*}"; want="${c#*:}"
    # shellcheck disable=SC2086
    if "$H" run $R --gpu standin --vram-budget 0.1 --verbose $f >"$T/with" 2>"$T/err"; then
        cmp -s "$T/base" "$T/with" || { echo "FAIL: standin $f changed the output"; fails=$((fails + 1)); }
        grep -q "gpu: $want on the device" "$T/err" || { echo "FAIL: standin $f: no '$want'"; grep "gpu:" "$T/err" | head -4; fails=$((fails + 1)); }
    else
        echo "FAIL: run --gpu standin $f exited non-zero:"; sed 's/^/  /' "$T/err" | head -3; fails=$((fails + 1))
    fi
done
expect 0 "gpu_experts" -- "$H" bench -m "$M" -p 4 -n 2 -r 1 -t 2 --gpu standin --vram-budget 0.1 --json
# hearth place lists the experts the run-time plan places (uniform order without statistics)
# and writes them as the expert index (MODEL.generated.gpuidx, or -o)
P="-m $M --gpu standin -c 64"
expect 0 "overall: 8 of 8 experts on the GPU" -- "$H" place $P --vram-budget 0.1
expect 0 "overall: 4 of 8 experts on the GPU" -- "$H" place $P --vram-budget 0.1 --n-cpu-moe 1
expect 0 "overall: 0 of 8 experts on the GPU" -- "$H" place $P --vram-budget 0.1 --cpu-moe
expect 0 '"n_placed": 8' -- "$H" place $P --vram-budget 0.1 --json
expect 1 "cannot open" -- "$H" place $P --vram-budget 0.1 --stats "$T/none.gguf"
expect 0 "wrote $T/idx.gguf (split.vram_capacity" -- "$H" place $P --vram-budget 0.1 -o "$T/idx.gguf"
expect 1 "not an expert placement index" -- "$H" run $R --gpu standin --vram-budget 0.1 --gpu-index "$T/moe.gguf"
# with routing statistics beside the model: place and run agree on how many fit a small budget,
# and the run reads the placement place wrote, leaving the file unchanged
head -c 3000 "$(dirname "$0")/../../models/heldout.txt" >"$T/cal.txt"
"$H" calibrate -m "$M" -f "$T/cal.txt" -c 64 -o "$T/cal.gguf" >/dev/null 2>&1 && cp "$T/cal.stats.gguf" "$T/moe.stats.gguf" ||
    { echo "FAIL: calibrate for routing statistics"; fails=$((fails + 1)); }
"$H" place $P --vram-budget 0.0012 >"$T/place" 2>&1 || { echo "FAIL: place with statistics"; cat "$T/place"; fails=$((fails + 1)); }
grep -q "serving .* of routings (statistics)" "$T/place" || { echo "FAIL: place: no routing share"; cat "$T/place"; fails=$((fails + 1)); }
n=$(sed -n 's/^overall: \([0-9]*\) of 8 experts.*/\1/p' "$T/place")
# shellcheck disable=SC2086
cp "$M.generated.gpuidx" "$T/placed.idx"
# shellcheck disable=SC2086
"$H" run $R --gpu standin --vram-budget 0.0012 --verbose >/dev/null 2>"$T/err"
grep -q "gpu: $n of 8 experts on the device" "$T/err" && grep -q "read from the GPU index $M.generated.gpuidx" "$T/err" ||
    { echo "FAIL: run at place's budget: not $n experts from place's index"; grep "gpu:" "$T/err" | head -4; fails=$((fails + 1)); }
cmp -s "$M.generated.gpuidx" "$T/placed.idx" || { echo "FAIL: the run changed place's index"; fails=$((fails + 1)); }
# shellcheck disable=SC2086
"$H" run $R --gpu standin --vram-budget 0.0012 --verbose --reset-gpu-index >/dev/null 2>"$T/err"
grep -q "gpu: $n of 8 experts on the device" "$T/err" && grep -q "routing counts in the statistics; expert placement written to" "$T/err" ||
    { echo "FAIL: --reset-gpu-index: not $n experts by the statistics"; grep "gpu:" "$T/err" | head -4; fails=$((fails + 1)); }
cmp -s "$M.generated.gpuidx" "$T/placed.idx" || { echo "FAIL: the run's own index differs from place's"; fails=$((fails + 1)); }
# the dynamic expert cache: same tokens, its line in --verbose and bench --json, the routing
# trace run writes and hearth routing replays; bad values refused
expect 0 "moe-cache N" -- "$H" run --help
expect 2 "not one of lru, lfru, static" -- "$H" run $R --gpu standin --moe-cache 2 --moe-cache-policy mru
expect 2 "out of range" -- "$H" run $R --moe-cache -1
# shellcheck disable=SC2086
if "$H" run $R --gpu standin --moe-cache 2 --verbose --dump-routing "$T/trace" >"$T/with" 2>"$T/err"; then
    cmp -s "$T/base" "$T/with" || { echo "FAIL: --moe-cache 2 changed the output"; fails=$((fails + 1)); }
    grep -q "gpu: expert cache (2 slots per layer, lfru): .* hits" "$T/err" ||
        { echo "FAIL: --moe-cache 2: no cache line"; grep "gpu:" "$T/err" | head -4; fails=$((fails + 1)); }
else
    echo "FAIL: run --moe-cache 2 exited non-zero:"; sed 's/^/  /' "$T/err" | head -3; fails=$((fails + 1))
fi
expect 0 "    2  lfru" -- "$H" routing "$T/trace" --slots 1,2
expect 0 '"decode_hit_rate"' -- "$H" routing "$T/trace" --slots 2 --policy lru --json
expect 1 "not a routing trace" -- "$H" routing "$T/base"
expect 2 "not one of lru, lfru, static, all" -- "$H" routing "$T/trace" --policy x
expect 1 "not a mixture of experts" -- "$H" run -m "$T/dense.gguf" -p hi -n 1 --dump-routing "$T/t2"
expect 0 '"gpu_cache_hit_rate"' -- "$H" bench -m "$M" -p 4 -n 2 -r 1 -t 2 --gpu standin --moe-cache 3 --json
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cpu_moe: ok"
