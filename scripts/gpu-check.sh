#!/usr/bin/env bash
# GPU check for a machine with an NVIDIA GPU (written for one H200 and 16 cores; about 5 of its
# 8 minutes): every step fails loudly and the script stops at the first failure.
#   1. configure and build a CUDA build (-DHEARTH_CUDA=ON) into build-gpu;
#   2. run the CUDA operation test (ctest device.test_cuda_ops), then the whole-model hybrid
#      test on the device (test_hybrid_model with HEARTH_TEST_GPU=cuda; its failure is
#      reported at the end, so the steps below still run);
#   3. hybrid (--gpu cuda) against the CPU path, logits of a prompt and greedy decodes, in dense
#      and predicted FFN modes, on a synthetic F16 PowerInfer model and on the shipped
#      models/bible-drelu.powerinfer.gguf (with its
#      statistics, so the GPU index is made from them), at budgets that put 0%, ~25% and 100% of
#      the FFN bytes on the GPU: max |logit difference| over the steps before the greedy tokens
#      first differ, greedy agreement, and the shares placed, predicted and measured;
#   4. decode speed on a 7B-shaped Q4_0 synthetic PowerInfer file (bench/sparse.sh's shape:
#      n_embd 4096, n_ff 11008, 32 heads, vocab 32000, ReGLU, predictor rank 512, threshold 0.4,
#      about 19% of neurons active): CPU only (predicted and dense), hybrid, and -ngl layer
#      offload at the same budget (about a quarter of the FFN bytes) with a dense FFN (llama.cpp-
#      style: the issue's baseline) and predicted, one table: mode, budget, GPU share of FFN
#      bytes, GPU share of activations (predicted from statistics when there are any, and
#      measured), tokens/s, overlap (CPU cold-neuron time / (that + time waiting for the GPU)),
#      round trips (waits for the device over the run); then hybrid / llama.cpp-style -ngl.
# Budgets are exact: a probe run prints the plan's bytes (hearth run --verbose, "gpu: bytes:"),
# and the budget for share s is probe budget - probe neuron budget + s x FFN bytes.
#
# usage: scripts/gpu-check.sh [--standin | --emu] [--layers N] [--build-dir DIR] [--threads N] [--jobs N]
#                             [--gen N] [--tol X] [--tol-pred X]
#   --standin    dry run without a GPU: a CPU build (-DHEARTH_CUDA=OFF), --gpu standin, the
#                stand-in's op test, and small models instead of the 7B shape
#   --emu        the CUDA backend itself without a GPU: built against the CPU emulator
#                (-DHEARTH_CUDA_EMU=ON, tests/cudaemu), --gpu cuda on an emulated device of
#                HEARTH_CUDAEMU_VRAM (default 4G), test_cuda_ops, small models; its speeds
#                mean nothing (every GPU thread is a fiber on one core)
#   --layers N   layers of the 7B-shaped file (default 32; cached in the build directory)
#   --build-dir  build directory (default build-gpu, or build-gpu-standin with --standin);
#                an existing build is reused (cmake --build is incremental)
#   --threads N  CPU threads for hearth (default: all cores)
#   --jobs N     build jobs (default 16)
#   --gen N      decoded tokens per timed run (default 32)
#   --tol X      largest |logit difference| accepted in dense FFN mode (default 0.05)
#   --tol-pred X the same for the bundled model in predicted mode (default 0.05; see step 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
standin=0 emu=0 layers=32 build= threads=$(nproc) jobs=16 gen=32 tol=0.05 tol_pred=0.05
GIB=1073741824

die() { echo "gpu-check.sh: FAIL: $*" >&2; exit 1; }
log() { echo "[gpu-check $(date +%H:%M:%S) +${SECONDS}s] $*" >&2; }
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: '$2' is not a positive integer"; }

while [ $# -gt 0 ]; do
    case $1 in
    --standin) standin=1 ;;
    --emu) emu=1 ;;
    --layers) need "$@"; posint "$1" "$2"; layers=$2; shift ;;
    --build-dir) need "$@"; build=$2; shift ;;
    --threads) need "$@"; posint "$1" "$2"; threads=$2; shift ;;
    --jobs) need "$@"; posint "$1" "$2"; jobs=$2; shift ;;
    --gen) need "$@"; posint "$1" "$2"; gen=$2; shift ;;
    --tol) need "$@"; [[ $2 =~ ^[0-9.]+([eE][-+]?[0-9]+)?$ ]] || die "--tol: '$2' is not a number"; tol=$2; shift ;;
    --tol-pred) need "$@"; [[ $2 =~ ^[0-9.]+([eE][-+]?[0-9]+)?$ ]] || die "--tol-pred: '$2' is not a number"; tol_pred=$2; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown flag '$1' (try --help)" ;;
    esac
    shift
done
[ "$standin" = 1 ] && [ "$emu" = 1 ] && die "--standin and --emu exclude each other"
if [ "$standin" = 1 ]; then dev=standin; else dev=cuda; fi
# small: no real GPU behind this run, so small models and budgets
small=$((standin + emu))
if [ "$emu" = 1 ]; then
    export HEARTH_CUDAEMU_VRAM=${HEARTH_CUDAEMU_VRAM:-4G}
    cuda_flags="-DHEARTH_CUDA_EMU=ON"
elif [ "$standin" = 1 ]; then
    cuda_flags="-DHEARTH_CUDA=OFF"
else
    cuda_flags="-DHEARTH_CUDA=ON"
fi
[ -n "$build" ] || build=$root/build-gpu$([ "$standin" = 1 ] && echo -standin || true)$([ "$emu" = 1 ] && echo -emu || true)
case $build in /*) ;; *) build=$root/$build ;; esac
work=$build/gpu-check
mkdir -p "$work" || die "cannot create $work"
H=$build/hearth
command -v awk >/dev/null || die "awk is required"

# --- 1. build -------------------------------------------------------------------------------
log "configuring $build ($cuda_flags)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release $cuda_flags \
    >"$work/cmake.log" 2>&1 || { tail -n 20 "$work/cmake.log" >&2; die "cmake configure"; }
optbin=$([ "$standin" = 1 ] && echo test_standin || echo "test_cuda_ops test_hybrid_model")
log "building hearth and $optbin with -j$jobs"
# shellcheck disable=SC2086 # optbin is a list of targets
cmake --build "$build" -j"$jobs" --target hearth $optbin >"$work/build.log" 2>&1 ||
    { grep -E "error" "$work/build.log" | head -n 20 >&2; die "build"; }
[ -x "$H" ] || die "no hearth binary at $H"

# --- 2. device operation test ------------------------------------------------------------------
optest=$([ "$standin" = 1 ] && echo 'device\.test_standin$' || echo 'device\.test_cuda_ops$')
n=$(cd "$build" && ctest -N -R "$optest" | sed -n 's/^Total Tests: //p')
[ "${n:-0}" -ge 1 ] || die "no test matches $optest in $build (was the CUDA backend built?)"
log "running $optest"
(cd "$build" && ctest -R "$optest" --output-on-failure) >"$work/optest.log" 2>&1 || { tail -n 30 "$work/optest.log" >&2; die "$optest"; }
grep -q "Skipped\|Not Run" "$work/optest.log" && { tail -n 5 "$work/optest.log" >&2; die "$optest was skipped: no usable device"; }
# The whole-model hybrid test on the device (the stand-in's own run is in the suite). A
# failure here is reported at the end, after the comparisons and timings below have run.
soft=
if [ "$standin" = 0 ]; then
    log "running test_hybrid_model on the device (HEARTH_TEST_GPU=cuda)"
    if ! (cd "$build/tests" && HEARTH_SRC="$root" HEARTH_TEST_GPU=cuda ./test_hybrid_model) >"$work/hybrid_model.log" 2>&1; then
        grep -i "fail" "$work/hybrid_model.log" | head -n 20 >&2
        soft="$soft test_hybrid_model ($work/hybrid_model.log)"
        log "test_hybrid_model FAILED on the device; going on"
    fi
fi

# --- helpers ---------------------------------------------------------------------------------
# probe MODEL ARGS...: sets P_BUDGET P_NEURON P_FFN from a large-budget run without hot neurons
probe() {
    local m=$1
    shift
    local big=$([ "$small" -ge 1 ] && echo 1 || echo 24)
    "$H" run -m "$m" -p x -n 1 --temp 0 -t "$threads" --gpu "$dev" --vram-budget "$big" --disable-gpu-index --verbose "$@" \
        >/dev/null 2>"$work/probe.err" || { tail -n 3 "$work/probe.err" >&2; die "probe run on $m"; }
    local line
    line=$(grep '^gpu: bytes: ' "$work/probe.err") || die "probe: no 'gpu: bytes:' line (is the GPU in use?)"
    read -r P_BUDGET P_NEURON P_FFN < <(echo "$line" | awk '{print $4, $8, $12}')
    [[ $P_NEURON =~ ^[0-9]+$ && $P_FFN =~ ^[1-9][0-9]*$ ]] || die "probe: cannot read '$line'"
}
# budget_gib SHARE: the --vram-budget that leaves SHARE of the FFN bytes for hot neurons
budget_gib() {
    awk -v b="$P_BUDGET" -v nb="$P_NEURON" -v f="$P_FFN" -v s="$1" -v g=$GIB \
        'BEGIN { x = b - nb + s * f + 64; if (x < 1) x = 1; printf "%.12f", x / g }'
}
# grab FILE REGEX: first capture of a sed regex in FILE ("" if none)
grab() { sed -n "s/$2/\1/p" "$1" | head -n 1; }
# compare CPU.json GPU.json: "maxdiff_prompt maxdiff agree steps": max |diff| of the prompt's
# logits, and over the steps up to the first token mismatch
compare() {
    awk 'FNR == 1 { f++ }
         /"token":/ { line = $0; sub(/.*"token":/, "", line); tok = line + 0
                      sub(/.*"logits":\[/, "", line); sub(/\].*/, "", line)
                      if (f == 1) { ta[++n1] = tok; la[n1] = line } else { tb[++n2] = tok; lb[n2] = line } }
         END { if (n1 == 0 || n1 != n2) { print "bad", 0, 0, n1 + 0; exit }
               md = 0; md0 = -1; agree = 0; same = 1
               for (i = 1; i <= n1; i++) {
                   if (same) { na = split(la[i], x, ","); nb = split(lb[i], y, ",")
                       if (na != nb) { print "bad", 0, 0, n1; exit }
                       for (j = 1; j <= na; j++) { d = x[j] - y[j]; if (d < 0) d = -d; if (d > md) md = d }
                       if (md0 < 0) md0 = md }
                   if (ta[i] == tb[i]) agree++; else same = 0 }
               printf "%.6g %.6g %d %d\n", md0, md, agree, n1 }' "$1" "$2"
}

# --- 3. logits: hybrid against the CPU ----------------------------------------------------------
# Dense FFN mode is continuous in its inputs: the device may only add rounding (--tol). The
# predicted mode is not: a different summation order moves predictor scores across the
# threshold and switches whole neurons on or off. With the bundled model's trained predictors
# the neurons near the threshold hardly fire, so it is held to --tol-pred; the synthetic model's
# random predictors switch neurons of any size, so its predicted rows are reported only.
syn=$work/syn-pi-f16.gguf
if [ ! -f "$syn" ]; then
    log "synthesizing the small PowerInfer model"
    "$H" synth -q -o "$syn" --powerinfer --type f16 --arch llama --act reglu --pred-rank 64 --n-embd 512 \
        --n-layer 4 --n-head 8 --n-ff 1536 --n-vocab 2000 --seed 5 >"$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; die "synth"; }
fi
bible=$work/bible.gguf
[ -f "$root/models/bible-drelu.powerinfer.gguf" ] || die "models/bible-drelu.powerinfer.gguf is missing"
ln -sf "$root/models/bible-drelu.powerinfer.gguf" "$bible"
ln -sf "$root/models/bible-drelu.powerinfer.stats.gguf" "$work/bible.stats.gguf"
prompt="And God said, Let there be light: and there was light. And God saw the light, that it was good:"
echo "## Hybrid ($dev) against the CPU: logits of a prompt and 32 greedy decodes"
echo
echo "| model | FFN mode | target FFN share | placed | activations: predicted / measured on the GPU | max abs diff (prompt / until tokens differ) | greedy agreement |"
echo "|---|---|---|---|---|---|---|"
for m in "$syn" "$bible"; do
    for mode in dense predicted; do
        "$H" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -t "$threads" --ffn $mode --gpu off --dump "$work/cpu.json" \
            >/dev/null 2>"$work/cpu.err" || { tail -n 3 "$work/cpu.err" >&2; die "CPU run of $m"; }
        probe "$m" -c 256 --ffn $mode
        for share in 0 0.25 1; do
            b=$(budget_gib "$share")
            rm -f "$m.generated.gpuidx"
            "$H" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -t "$threads" --ffn $mode --gpu "$dev" --vram-budget "$b" \
                --verbose --dump "$work/gpu.json" >/dev/null 2>"$work/gpu.err" ||
                { tail -n 3 "$work/gpu.err" >&2; die "$dev run of $m at $b GiB"; }
            placed=$(grab "$work/gpu.err" '.* = \([0-9.]*\)% of FFN bytes.*')
            pred=$(grab "$work/gpu.err" '.*serving \([0-9.]*\)% of activations.*')
            meas=$(grab "$work/gpu.err" '.*FFN splits, \([0-9.]*\)% of computed.*')
            read -r md0 md agree steps < <(compare "$work/cpu.json" "$work/gpu.json")
            [ "$md0" != bad ] || die "$m share $share: the dumps do not line up"
            echo "| $(basename "$m") | $mode | $share | ${placed:-?}% | ${pred:--}% / ${meas:-?}% | $md0 / $md | $agree/$steps |"
            awk -v p="${placed:-x}" -v s="$share" 'BEGIN { exit !(p != "x" && (p / 100 - s < 0.05 && s - p / 100 < 0.05)) }' ||
                die "$m: placed ${placed:-?}% of the FFN, wanted $share"
            if [ $mode = dense ]; then
                awk -v d="$md" -v t="$tol" 'BEGIN { exit !(d <= t) }' || die "$m dense share $share: logits differ by $md (tolerance $tol)"
                [ "$agree" -ge $((steps * 9 / 10)) ] || die "$m dense share $share: greedy tokens agree on $agree of $steps"
            elif [ "$m" = "$bible" ]; then
                awk -v d="$md" -v t="$tol_pred" 'BEGIN { exit !(d <= t) }' ||
                    die "$m predicted share $share: logits differ by $md (tolerance $tol_pred)"
            fi
        done
    done
done
log "logit comparisons passed"

# --- 3b. device attention of dense files: RoPE factors + YaRN, q/k/v biases, q/k norms -------
# Llama-3.1 (rope_freqs with YaRN), Qwen2 (q/k/v biases) and Qwen3 (per-head q/k norms) with
# their attention on the device: whole layers by -ngl (1 of 4 layers: 25% of the FFN; all
# layers and the output: 100%), dense FFN mode, held to --tol like the dense rows above.
echo
echo "## Device attention of dense files ($dev) against the CPU: RoPE factors/YaRN, biases, q/k norms"
echo
echo "| model | -ngl | placed | max abs diff (prompt / until tokens differ) | greedy agreement |"
echo "|---|---|---|---|---|"
for spec in "llama-rope_freqs-yarn:--arch llama --rope-freqs --rope-scaling yarn --rope-scale 4 --rope-orig-ctx 512" \
    "qwen2:--arch qwen2" "qwen3:--arch qwen3"; do
    name=${spec%%:*}
    m=$work/dense-$name.gguf
    if [ ! -f "$m" ]; then
        # shellcheck disable=SC2086 # the spec's flags
        "$H" synth -q -o "$m" ${spec#*:} --type f16 --act swiglu --n-embd 512 --n-layer 4 --n-head 8 --n-head-kv 4 \
            --n-ff 1536 --n-vocab 2000 --seed 5 >"$work/synth.log" 2>&1 || { cat "$work/synth.log" >&2; die "synth of $name"; }
    fi
    "$H" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -t "$threads" --ffn dense --gpu off --dump "$work/cpu.json" \
        >/dev/null 2>"$work/cpu.err" || { tail -n 3 "$work/cpu.err" >&2; die "CPU run of $m"; }
    for ngl in 1 5; do
        "$H" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -t "$threads" --ffn dense --gpu "$dev" \
            --vram-budget "$([ "$small" -ge 1 ] && echo 1 || echo 24)" -ngl $ngl --verbose --dump "$work/gpu.json" \
            >/dev/null 2>"$work/gpu.err" || { tail -n 3 "$work/gpu.err" >&2; die "$dev run of $m with -ngl $ngl"; }
        placed=$(grab "$work/gpu.err" '.* = \([0-9.]*\)% of FFN bytes.*')
        read -r md0 md agree steps < <(compare "$work/cpu.json" "$work/gpu.json")
        [ "$md0" != bad ] || die "$name -ngl $ngl: the dumps do not line up"
        echo "| $name | $ngl | ${placed:-?}% | $md0 / $md | $agree/$steps |"
        awk -v p="${placed:-x}" -v s="$([ $ngl = 1 ] && echo 0.25 || echo 1)" \
            'BEGIN { exit !(p != "x" && (p / 100 - s < 0.05 && s - p / 100 < 0.05)) }' ||
            die "$name -ngl $ngl: placed ${placed:-?}% of the FFN"
        awk -v d="$md" -v t="$tol" 'BEGIN { exit !(d <= t) }' || die "$name -ngl $ngl: logits differ by $md (tolerance $tol)"
        [ "$agree" -ge $((steps * 9 / 10)) ] || die "$name -ngl $ngl: greedy tokens agree on $agree of $steps"
    done
done
log "device attention comparisons passed"

# --- 4. decode speed: CPU, hybrid, -ngl ----------------------------------------------------------
if [ "$small" -ge 1 ]; then
    shape="--type q4_0 --n-embd 512 --n-layer 4 --n-head 8 --n-vocab 2000 --n-ff 1376 --pred-rank 64"
    big=$work/small-q4_0.gguf
else
    shape="--type q4_0 --n-embd 4096 --n-layer $layers --n-head 32 --n-vocab 32000 --n-ff 11008 --pred-rank 512"
    big=$work/7b-q4_0-l$layers.gguf
fi
if [ ! -f "$big" ]; then
    log "synthesizing $big"
    "$H" synth -q -o "$big.part" $shape --arch llama --act reglu --powerinfer --seed 1 >"$work/synth.log" 2>&1 ||
        { cat "$work/synth.log" >&2; rm -f "$big.part"; die "synth of the timing model"; }
    mv "$big.part" "$big"
fi
T="--sparse-threshold 0.4 -t $threads -c 64"
probe "$big" $T
b25=$(budget_gib 0.25)
# whole layers that fit the same budget: dense FFN (llama.cpp-style, the issue's baseline)
# and predicted (whole layers that are sparse themselves)
ngl_fit() { # mode
    "$H" run -m "$big" -p x -n 1 $T --ffn "$1" --gpu "$dev" --vram-budget "$b25" -ngl 100000 >/dev/null 2>"$work/ngl.err" &&
        die "-ngl 100000 fit in a quarter of the FFN bytes"
    local n
    n=$(grab "$work/ngl.err" '.*it holds \([0-9]*\) whole layers.*')
    [[ $n =~ ^[0-9]+$ ]] || { cat "$work/ngl.err" >&2; die "no layer count in the -ngl error"; }
    echo "$n"
}
ngl_dense=$(ngl_fit dense)
ngl_pred=$(ngl_fit predicted)
bench() { # label, flags...
    local label=$1
    shift
    "$H" bench -m "$big" -p 8 -n "$gen" -r 1 --json $T "$@" >"$work/b.json" 2>"$work/b.err" ||
        { tail -n 3 "$work/b.err" >&2; die "bench $label"; }
    num() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" "$work/b.json"; }
    TPS=$(num decode_tok_s)
    awk -v l="$label" -v b="${BUDGET:--}" -v fs="$(num gpu_ffn_share)" -v ap="$(num gpu_act_share_predicted)" \
        -v am="$(num gpu_act_share)" -v tps="$TPS" -v c="$(num gpu_cold_s)" -v w="$(num gpu_wait_s)" \
        -v fr="$(num computed_fraction)" -v sp="$(num gpu_ffn_splits)" -v rt="$(num gpu_syncs)" \
        -v res="$(num gpu_layers_resident)" 'BEGIN {
        f = fs == "" ? "-" : sprintf("%.1f%%", 100 * fs)
        p = (ap == "" || ap < 0) ? "-" : sprintf("%.1f%%", 100 * ap)
        m = am == "" ? "-" : sprintf("%.1f%%", 100 * am)
        o = (sp == "" || sp == 0 || c + w == 0) ? "-" : sprintf("%.0f%% (cold %.3f s, wait %.3f s)", 100 * c / (c + w), c, w)
        r = rt == "" ? "-" : sprintf("%d (%d resident layers)", rt, res)
        printf "| %s | %s | %s | %s / %s | %.2f | %.1f%% | %s | %s |\n", l, b, f, p, m, tps, 100 * fr, o, r }'
}
echo
echo "## Decode on $(basename "$big") (threshold 0.4), $gen tokens, $threads threads"
echo
echo "| mode | budget GiB | GPU share of FFN bytes | GPU share of activations: predicted / measured | decode tok/s | active neurons | overlap | round trips |"
echo "|---|---|---|---|---|---|---|---|"
B25=$(printf '%.3f' "$b25")
BUDGET=- bench "CPU only, predicted" --gpu off
BUDGET=- bench "CPU only, dense" --gpu off --ffn dense
BUDGET=$B25 bench "hybrid (hot neurons), predicted" --gpu "$dev" --vram-budget "$b25"
hybrid_tps=$TPS
ngl_tps=
for spec in "dense $ngl_dense" "predicted $ngl_pred"; do
    set -- $spec
    if [ "$2" -gt 0 ]; then
        BUDGET=$B25 bench "-ngl $2 (whole layers), $1$([ "$1" = dense ] && echo ": llama.cpp-style" || true)" \
            --gpu "$dev" --vram-budget "$b25" -ngl "$2" --ffn "$1"
        [ "$1" = dense ] && ngl_tps=$TPS
    else
        echo "| -ngl, $1 | $B25 | no whole layer fits | - | - | - | - | - |"
    fi
done
echo
awk -v h="$hybrid_tps" -v n="${ngl_tps:-0}" 'BEGIN {
    if (n > 0) printf "hybrid decode / llama.cpp-style -ngl decode at the same budget: %.2fx (target: at least 3x)\n", h / n
    else print "hybrid decode / llama.cpp-style -ngl: no whole layer fits the budget" }'
[ -z "$soft" ] || die "failed:$soft"
log "done in ${SECONDS}s"
