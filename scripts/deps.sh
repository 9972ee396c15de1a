#!/bin/sh
# Installs what Hearth's build and tests need on Debian 12, only what is missing.
# Usage: scripts/deps.sh [build|test]
set -eu
missing=""
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || missing="$missing $1"; }
need_cmd cc gcc
need_cmd make make
need_cmd cmake cmake
need_cmd pkg-config pkg-config
need_pkg libmicrohttpd-dev               # hearth serve: HTTP (optional: without it serve is not built)
need_pkg libcjson-dev                    # hearth serve: JSON
if [ "${1:-build}" = test ]; then
    need_cmd clang clang
    need_cmd g++ g++                     # the CUDA backend on the CPU emulator (tests/cudaemu) is C++
    need_pkg libclang-rt-14-dev          # libFuzzer runtime for the fuzz tests
    need_cmd node nodejs                 # node-llama-cpp, the llama.cpp reference
    need_cmd npm npm
    need_cmd git git                     # conformance.vocab unpacks llama.cpp's source bundle
    need_cmd chromium chromium           # the chat page's browser test (playwright-core drives it)
    need_cmd python3 python3             # hearth chat on a pseudo-terminal (tests/cli/chat_tty.py)
    need_pkg python3-jinja2              # the server's tool prompts against the real Jinja templates (tests/server/tools_jinja.py)
fi
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
