#!/bin/sh
# Builds hearth and generates text with the bundled small model.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target hearth
model=models/demo.gguf
if [ ! -f "$model" ]; then
    # No trained model ships yet: a small random-weight model stands in (its text is gibberish).
    model=build/demo-synth.gguf
    [ -f "$model" ] || build/hearth synth -o "$model" --type q8_0 --n-embd 512 --n-layer 4 --n-head 8 --n-ff 1536 --n-vocab 2000
fi
build/hearth run -m "$model" -p "${1:-Once upon a time}" -n 64 --temp 0.8 --seed 42 --verbose
