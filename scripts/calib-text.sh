#!/bin/sh
# Writes the calibration text of the bundled model's sparse files: the first 1 MB of its
# training text (the King James Bible from Debian's bible-kjv, one verse per line, references
# dropped, as tools/train.py prepares it). With it, `hearth calibrate` reproduces
# models/bible-drelu.powerinfer.gguf byte for byte (README, "The sparse pipeline").
# Usage: scripts/calib-text.sh [OUT]   (default: calib.txt)
set -eu
out=${1:-calib.txt}
if ! command -v bible >/dev/null 2>&1; then
    echo "installing: bible-kjv"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq bible-kjv >/dev/null
fi
bible -f Gen1:1-Rev22:21 </dev/null |
    sed -E 's/^[^ ]+[0-9]+:[0-9]+ //; s/^[[:space:]]+//; s/[[:space:]]+$//' |
    head -c 1000000 >"$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
