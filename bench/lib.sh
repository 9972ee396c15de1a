# Sourced by the bench/*.sh scripts: messages, argument checks, finding the tools and the
# llama.cpp reference, and the JSON and number helpers. The script sets `me` (its name) and
# `root` first; the tool finders read and set `hearth`, `membw`, `cache`, `llama`, `llama_ref`.
die() { echo "$me: $*" >&2; exit 2; }
log() { echo "[$me $(date +%H:%M:%S)] $*" >&2; }
need() { [ $# -ge 2 ] || die "$1 needs a value"; }
posint() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: '$2' is not a positive integer"; }

# Drops the files from the page cache (GNU dd's nocache, i.e. posix_fadvise DONTNEED; no root
# needed), so the next engine to map them reads them afresh. Hearth asks for 2 MiB pages, which
# Linux gives to pages read through such a mapping but not to the pages a generator has just
# written (docs/performance.md, "2 MiB pages"): without this a benchmark of freshly made files
# measures 4 KiB pages, which users loading a model from disk do not get. Harmless where
# unsupported.
bench_evict() {
    local f
    for f in "$@"; do [ -f "$f" ] && dd if="$f" iflag=nocache count=0 status=none 2>/dev/null; done
    return 0
}

# hearth: the newest build*/hearth unless given; membw: built next to the cache when missing or stale.
bench_find_tools() {
    if [ -z "$hearth" ]; then
        for c in "$root/build/hearth" $(ls -t "$root"/build*/hearth 2>/dev/null); do
            [ -x "$c" ] && { hearth=$c; break; }
        done
    fi
    [ -n "$hearth" ] && [ -x "$hearth" ] || die "no hearth binary (build it, or pass --hearth BIN)"
    if [ -z "$membw" ]; then
        for c in "$root/build/bench/membw" "$cache/membw"; do [ -x "$c" ] && { membw=$c; break; }; done
    fi
    if [ -z "$membw" ] || [ "$root/bench/membw.c" -nt "$membw" -a "$membw" = "$cache/membw" ]; then
        membw=$cache/membw
        log "compiling bench/membw.c -> $membw"
        ${CC:-cc} -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -pthread -o "$membw" "$root/bench/membw.c" ||
            die "cannot compile bench/membw.c"
    fi
}

# llama=1 asks for the llama.cpp reference; it falls back to 0 (Hearth only) when it cannot be had.
# llama_cpu=VARIANT (--llama-cpu) makes it run that CPU build of ggml (bench_llama_variant).
bench_find_llama() {
    llama_ref=$root/tests/conformance/llama_ref.mjs
    if [ "$llama" = 1 ]; then
        if ! command -v node >/dev/null 2>&1 || [ ! -f "$llama_ref" ]; then
            log "node or tests/conformance/llama_ref.mjs missing: Hearth only"; llama=0
        elif ! sh "$root/scripts/llama-ref-setup.sh" >&2; then
            log "node-llama-cpp could not be installed: Hearth only"; llama=0
        fi
    fi
    [ "$llama" = 1 ] && [ -n "${llama_cpu:-}" ] && bench_llama_variant
    return 0
}

# node-llama-cpp ships ggml's CPU backend in one build per CPU family (libggml-cpu-zen4.so,
# -icelake, -sapphirerapids, ...) and loads the best one the CPU runs: with AMX that is the
# sapphirerapids build, whose kernels no desktop CPU has. A copy of the package under CACHE
# holding only the asked-for build (hard links where the file system allows) makes llama.cpp
# run what such a CPU would; llama_ref then points into the copy.
bench_llama_variant() {
    local nm=$root/tests/conformance/node_modules s=$cache/llama-cpu-$llama_cpu bins e b f
    bins=$(ls -d "$nm"/@node-llama-cpp/*/bins/* 2>/dev/null | head -n 1)
    [ -n "$bins" ] || die "--llama-cpu: no prebuilt llama.cpp under $nm/@node-llama-cpp"
    if [ ! -f "$bins/libggml-cpu-$llama_cpu.so" ]; then
        die "--llama-cpu: no CPU build '$llama_cpu' in node-llama-cpp (it has: $(ls "$bins" |
            sed -n 's/^libggml-cpu-\(.*\)\.so$/\1/p' | tr '\n' ' '))"
    fi
    rm -rf "$s" && mkdir -p "$s/node_modules" || die "cannot create $s"
    for e in "$nm"/* "$nm"/.bin; do
        [ -e "$e" ] || continue
        b=$(basename "$e")
        case $b in
        node-llama-cpp | @node-llama-cpp) cp -al "$e" "$s/node_modules/$b" 2>/dev/null || cp -a "$e" "$s/node_modules/$b" ||
            die "cannot copy $e" ;;
        *) ln -s "$(cd "$e" && pwd -P)" "$s/node_modules/$b" ;;
        esac
    done
    for f in "$s/node_modules/@node-llama-cpp"/*/bins/*/libggml-cpu-*.so; do
        [ "$(basename "$f")" = "libggml-cpu-$llama_cpu.so" ] || rm -f "$f"
    done
    cp "$llama_ref" "$s/" || die "cannot copy $llama_ref"
    llama_ref=$s/llama_ref.mjs
    log "llama.cpp runs its '$llama_cpu' CPU build only ($s)"
}

# JSON fields (first occurrence: top-level keys precede any per-run arrays) and numbers.
jnum() { grep -o "\"$2\":[-0-9.eE+]*" "$1" | head -n 1 | cut -d: -f2; }
jstr() { grep -o "\"$2\":\"[^\"]*\"" "$1" | head -n 1 | cut -d'"' -f4; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
fmt() { awk -v a="$1" -v d="${2:-1}" 'BEGIN { if (a == "") print "-"; else printf "%.*f", d, a }'; }
