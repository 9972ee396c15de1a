/* Reader and writer of Hearth's expert placement index (moeidx.h). */
#include "moeidx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/types.h"

#define K_BLOCKS HR_MOEIDX_ARCH ".block_count"
#define K_EXPERTS HR_MOEIDX_ARCH ".expert_count"
#define K_FF HR_MOEIDX_ARCH ".expert_feed_forward_length"
#define K_BYTES HR_MOEIDX_ARCH ".expert_bytes"
#define MAX_LAYERS 4096
#define MAX_EXPERTS 4096
#define MAX_FF (1 << 20)

int hr_moeidx_init(hr_moeidx *x, int32_t n_layer, int32_t n_expert, int32_t n_ff, hr_err *e) {
    memset(x, 0, sizeof *x);
    if (n_layer < 1 || n_layer > MAX_LAYERS || n_expert < 1 || n_expert > MAX_EXPERTS || n_ff < 1 || n_ff > MAX_FF)
        return hr_errf(e, "bad expert index shape: %d layers x %d experts x %d neurons", n_layer, n_expert, n_ff);
    const size_t nx = (size_t)n_layer * (size_t)n_expert;
    x->whole = calloc(nx, 1), x->neurons = calloc(nx * (size_t)n_ff, 1);
    if (!x->whole || !x->neurons) {
        hr_moeidx_free(x);
        return hr_errf(e, "out of memory for a %d x %d x %d expert index", n_layer, n_expert, n_ff);
    }
    x->n_layer = n_layer, x->n_expert = n_expert, x->n_ff = n_ff;
    return 0;
}

void hr_moeidx_free(hr_moeidx *x) {
    if (!x) return;
    free(x->whole), free(x->neurons);
    memset(x, 0, sizeof *x);
}

int hr_moeidx_write(const char *path, const hr_moeidx *x, hr_err *e) {
    if (!x->whole || !x->neurons) return hr_errf(e, "%s: expert index is empty", path);
    gguf_writer *w = gguf_writer_new(true);
    if (!w) return hr_errf(e, "out of memory writing expert index %s", path);
    gguf_w_str(w, "general.architecture", HR_MOEIDX_ARCH);
    gguf_w_u32(w, K_BLOCKS, (uint32_t)x->n_layer);
    gguf_w_u32(w, K_EXPERTS, (uint32_t)x->n_expert);
    gguf_w_u32(w, K_FF, (uint32_t)x->n_ff);
    gguf_w_u64(w, K_BYTES, x->expert_bytes);
    gguf_w_u64(w, "split.vram_capacity", x->capacity);
    const size_t ne = (size_t)x->n_expert, ff = (size_t)x->n_ff;
    char name[64];
    for (int32_t il = 0; il < x->n_layer; il++) {
        const uint64_t sw[1] = {ne}, sn[2] = {ff, ne};
        snprintf(name, sizeof name, "blk.%d.gpu_experts", il);
        gguf_w_tensor(w, name, HR_I8, 1, sw, x->whole + (size_t)il * ne, ne);
        snprintf(name, sizeof name, "blk.%d.gpu_expert_neurons", il);
        gguf_w_tensor(w, name, HR_I8, 2, sn, x->neurons + (size_t)il * ne * ff, ne * ff);
    }
    /* a new file renamed into place: a context reading the old one, or starting meanwhile,
     * never sees a partial file */
    char tmp[1100];
    int r = (size_t)snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= sizeof tmp
                ? hr_errf(e, "path too long")
                : gguf_w_write(w, tmp, e);
    gguf_writer_free(w);
    if (!r && rename(tmp, path)) {
        remove(tmp);
        r = hr_errf(e, "cannot rename %s into place", tmp);
    }
    return r ? hr_errctx(e, "writing expert index %s", path) : 0;
}

/* A required u32 key in [1, max]. */
static int key_u32(const gguf_file *f, const char *key, uint32_t max, int32_t *out, hr_err *e) {
    uint32_t v;
    const int rc = gguf_get_u32(f, key, &v, e);
    if (rc < 0) return -1;
    if (rc == 1) return hr_errf(e, "key '%s' is missing", key);
    if (v < 1 || v > max) return hr_errf(e, "key '%s' is %u, outside 1..%u", key, v, max);
    *out = (int32_t)v;
    return 0;
}

static int header(const gguf_file *f, hr_moeidx *x, hr_err *e) {
    gguf_str arch;
    int rc = gguf_get_str(f, "general.architecture", &arch, e);
    if (rc < 0) return -1;
    if (rc == 1 || !gguf_str_eq(arch, HR_MOEIDX_ARCH))
        return hr_errf(e, "not an expert placement index (general.architecture is '%.*s', expected '" HR_MOEIDX_ARCH
                          "'; a mixture of experts' GPU index is written by hearth place)",
                       rc ? 6 : (int)(arch.len > 64 ? 64 : arch.len), rc ? "absent" : arch.ptr);
    if (key_u32(f, K_BLOCKS, MAX_LAYERS, &x->n_layer, e) || key_u32(f, K_EXPERTS, MAX_EXPERTS, &x->n_expert, e) ||
        key_u32(f, K_FF, MAX_FF, &x->n_ff, e))
        return -1;
    const char *k64[2] = {K_BYTES, "split.vram_capacity"};
    uint64_t *v64[2] = {&x->expert_bytes, &x->capacity};
    for (int i = 0; i < 2; i++) {
        rc = gguf_get_u64(f, k64[i], v64[i], e);
        if (rc < 0) return -1;
        if (rc == 1) return hr_errf(e, "key '%s' is missing", k64[i]);
    }
    if (f->n_tensors != 2 * (uint64_t)x->n_layer)
        return hr_errf(e, "%llu tensors, but %d layers need exactly 2 each (gpu_experts, gpu_expert_neurons)",
                       (unsigned long long)f->n_tensors, x->n_layer);
    return 0;
}

/* Tensor pos must be blk.<il>.<what>, I8, of shape {a} (b 0) or {a, b}; its 0/1 flags into dst. */
static int flags(const gguf_file *f, uint64_t pos, int32_t il, const char *what, uint64_t a, uint64_t b, uint8_t *dst,
                 hr_err *e) {
    const gguf_tensor *t = &f->tensors[pos];
    char want[64];
    snprintf(want, sizeof want, "blk.%d.%s", il, what);
    if (!gguf_str_eq(t->name, want))
        return hr_errf(e, "tensor %llu is '%.*s', expected '%s' (blk.N.gpu_experts, blk.N.gpu_expert_neurons for N = 0, "
                          "1, ... in numeric order)",
                       (unsigned long long)pos, (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr, want);
    if (t->type != HR_I8) return hr_errf(e, "tensor '%s' has type id %u, expected i8 (id %d)", want, t->type, HR_I8);
    const uint32_t dims = b ? 2 : 1;
    if (t->n_dims != dims || t->ne[0] != a || (b && t->ne[1] != b))
        return hr_errf(e, "tensor '%s' has shape {%llu, %llu} (%u dimensions), expected {%llu%s%llu}", want,
                       (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], t->n_dims, (unsigned long long)a,
                       b ? ", " : "", (unsigned long long)b);
    const uint64_t n = a * (b ? b : 1);
    if (t->nbytes < n) return hr_errf(e, "tensor '%s' holds %llu bytes, expected %llu", want, (unsigned long long)t->nbytes, (unsigned long long)n);
    const uint8_t *s = t->data;
    for (uint64_t i = 0; i < n; i++) {
        if (s[i] > 1) return hr_errf(e, "%s[%llu] = %d (flags must be 0 or 1)", want, (unsigned long long)i, (int8_t)s[i]);
        dst[i] = s[i];
    }
    return 0;
}

int hr_moeidx_from_gguf(const gguf_file *f, hr_moeidx *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    hr_moeidx h = {0};
    if (header(f, &h, e)) return -1;
    hr_moeidx x;
    if (hr_moeidx_init(&x, h.n_layer, h.n_expert, h.n_ff, e)) return -1;
    x.capacity = h.capacity, x.expert_bytes = h.expert_bytes;
    const uint64_t ne = (uint64_t)x.n_expert, ff = (uint64_t)x.n_ff;
    for (int32_t il = 0; il < x.n_layer; il++) {
        uint8_t *w = x.whole + (size_t)il * ne, *nr = x.neurons + (size_t)il * ne * ff;
        if (flags(f, 2 * (uint64_t)il, il, "gpu_experts", ne, 0, w, e) ||
            flags(f, 2 * (uint64_t)il + 1, il, "gpu_expert_neurons", ff, ne, nr, e))
            goto bad;
        for (uint64_t k = 0; k < ne; k++)
            for (uint64_t j = 0; w[k] && j < ff; j++)
                if (nr[k * ff + j]) {
                    hr_errf(e, "layer %d: expert %llu is on the device whole and also lists hot neuron %llu", il,
                            (unsigned long long)k, (unsigned long long)j);
                    goto bad;
                }
    }
    *out = x;
    return 0;
bad:
    hr_moeidx_free(&x);
    return -1;
}

int hr_moeidx_read(const char *path, hr_moeidx *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    gguf_file f;
    if (gguf_open(&f, path, e)) return hr_errctx(e, "expert index %s", path);
    const int r = hr_moeidx_from_gguf(&f, out, e);
    gguf_close(&f);
    return r ? hr_errctx(e, "expert index %s", path) : 0;
}
