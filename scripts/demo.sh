#!/bin/sh
# Builds hearth and generates text with the bundled small model.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target hearth
# The bundled model: a 1.8M-parameter dReLU LLaMA trained on the King James Bible (docs/model.md).
model=models/bible-drelu.gguf
build/hearth run -m "$model" -p "${1:-And God said}" -n 80 --temp 0.7 --seed 42 --ffn exact --stats --verbose
