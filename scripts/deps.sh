#!/bin/sh
# Installs what Hearth's build and tests need on Debian 12, only if missing.
# Usage: scripts/deps.sh [build|test]
set -eu
want="gcc make cmake"
[ "${1:-build}" = test ] && want="$want clang libclang-rt-14-dev nodejs npm"
missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
