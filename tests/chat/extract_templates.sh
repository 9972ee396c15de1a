#!/bin/sh
# Extracts llama.cpp's real chat templates (models/templates/*.jinja) from the source bundle
# node-llama-cpp ships, for chat.test_conform. Nothing of the bundle is kept in the tree.
# usage: extract_templates.sh SRC_DIR OUT_DIR
# Exit: 0 extracted (or already there), 77 no bundle or no git (one line), 1 failure.
set -u
bundle="$1/tests/conformance/node_modules/node-llama-cpp/llama/gitRelease.bundle"
out="$2"
if [ ! -f "$bundle" ]; then
    echo "extract_templates: no llama.cpp source bundle ($bundle); skipping"
    exit 77
fi
command -v git >/dev/null 2>&1 || { echo "extract_templates: git not found; skipping"; exit 77; }
# The bundle's commit names the extraction, so a new bundle re-extracts.
head=$(git bundle list-heads "$bundle" 2>/dev/null | awk 'NR == 1 { print $1 }')
[ -n "$head" ] || { echo "extract_templates: cannot read $bundle"; exit 1; }
[ -f "$out/.done-$head" ] && exit 0
rm -rf "$out"
mkdir -p "$out" || exit 1
repo="$out/llama.git"
git clone -q --bare "$bundle" "$repo" || { echo "extract_templates: git clone of the bundle failed"; exit 1; }
n=0
for f in $(git -C "$repo" ls-tree --name-only "$head" models/templates/); do
    case "$f" in *.jinja) ;; *) continue ;; esac
    git -C "$repo" show "$head:$f" >"$out/$(basename "$f")" || exit 1
    n=$((n + 1))
done
rm -rf "$repo"
[ "$n" -gt 0 ] || { echo "extract_templates: no templates in the bundle"; exit 1; }
touch "$out/.done-$head"
echo "extract_templates: $n templates"
