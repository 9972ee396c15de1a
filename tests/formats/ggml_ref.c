/* Run-time binding to ggml's reference (de)quantizers (ggml_ref.h). */
#include "ggml_ref.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/types.h"

#define GGML_REL_PATH "tests/conformance/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so"

bool hr_ggml_open(hr_ggml *g, char *why, size_t why_cap) {
    memset(g, 0, sizeof *g);
    const char *lib = getenv("HEARTH_GGML_LIB"), *src = getenv("HEARTH_SRC");
    if (lib && *lib) snprintf(g->path, sizeof g->path, "%s", lib);
    else if (src && *src) snprintf(g->path, sizeof g->path, "%s/%s", src, GGML_REL_PATH);
    else {
        snprintf(why, why_cap, "neither HEARTH_GGML_LIB nor HEARTH_SRC is set, ggml's library not located");
        return false;
    }
    g->handle = dlopen(g->path, RTLD_NOW | RTLD_LOCAL);
    if (!g->handle) {
        const char *e = dlerror();
        snprintf(why, why_cap, "ggml's library not available (%s)", e ? e : g->path);
        return false;
    }
    return true;
}

void hr_ggml_close(hr_ggml *g) {
    if (g->handle) dlclose(g->handle);
    g->handle = NULL;
}

/* ggml's function name part of a type: Hearth's name with the K-quants' 'k' upper-case. */
static bool ggml_type_part(uint32_t t, char *out, size_t cap) {
    const char *name = hr_type_name(t);
    if (!name || !hr_type_is_quant(t) || strlen(name) + 1 > cap) return false;
    strcpy(out, name);
    size_t len = strlen(out);
    if (len > 2 && out[len - 2] == '_' && out[len - 1] == 'k') out[len - 1] = 'K';
    return true;
}

static void *lookup(const hr_ggml *g, const char *prefix, uint32_t t, const char *suffix) {
    char part[32], sym[96];
    if (!g->handle || !ggml_type_part(t, part, sizeof part)) return NULL;
    snprintf(sym, sizeof sym, "%s%s%s", prefix, part, suffix);
    return dlsym(g->handle, sym);
}

/* dlsym returns an object pointer; POSIX guarantees it converts to a function pointer. */
hr_ggml_quant_fn hr_ggml_quant(const hr_ggml *g, uint32_t t) {
    void *p = lookup(g, "quantize_row_", t, "_ref");
    hr_ggml_quant_fn f;
    memcpy(&f, &p, sizeof f);
    return p ? f : NULL;
}

hr_ggml_dequant_fn hr_ggml_dequant(const hr_ggml *g, uint32_t t) {
    void *p = lookup(g, "dequantize_row_", t, "");
    hr_ggml_dequant_fn f;
    memcpy(&f, &p, sizeof f);
    return p ? f : NULL;
}

bool hr_ggml_quant_row(const hr_ggml *g, uint32_t t, const float *x, void *y, int64_t n) {
    hr_ggml_quant_fn f = hr_ggml_quant(g, t);
    if (!f) return false;
    f(x, y, n);
    return true;
}

bool hr_ggml_dequant_row(const hr_ggml *g, uint32_t t, const void *x, float *y, int64_t n) {
    hr_ggml_dequant_fn f = hr_ggml_dequant(g, t);
    if (!f) return false;
    f(x, y, n);
    return true;
}
