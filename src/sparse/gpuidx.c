/* Reader and writer of PowerInfer's GPU index file (gpuidx.h). */
#include "gpuidx.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"

#define GPUIDX_MAX_LAYERS 4096
#define GPUIDX_MAX_FF (1 << 24)

int hr_gpuidx_init(hr_gpuidx *g, int32_t n_layer, int32_t n_ff, hr_err *e) {
    memset(g, 0, sizeof *g);
    if (n_layer < 1 || n_layer > GPUIDX_MAX_LAYERS || n_ff < 1 || n_ff > GPUIDX_MAX_FF)
        return hr_errf(e, "bad GPU index shape: %d layers x %d neurons", n_layer, n_ff);
    g->hot = calloc((size_t)n_layer * (size_t)n_ff, 1);
    if (!g->hot) return hr_errf(e, "out of memory for a %d x %d GPU index", n_layer, n_ff);
    g->n_layer = n_layer, g->n_ff = n_ff;
    return 0;
}

void hr_gpuidx_free(hr_gpuidx *g) {
    if (!g) return;
    free(g->hot);
    memset(g, 0, sizeof *g);
}

int32_t hr_gpuidx_bucket(const hr_gpuidx *g, int32_t il, int32_t *ids) {
    const uint8_t *h = g->hot + (size_t)il * g->n_ff;
    int32_t k = 0;
    for (int32_t j = 0; j < g->n_ff; j++)
        if (h[j]) {
            if (ids) ids[k] = j;
            k++;
        }
    return k;
}

char *hr_gpuidx_default_path(const char *model_path) {
    size_t n = strlen(model_path), s = strlen(HR_GPUIDX_SUFFIX);
    char *p = malloc(n + s + 1);
    if (!p) return NULL;
    memcpy(p, model_path, n);
    memcpy(p + n, HR_GPUIDX_SUFFIX, s + 1);
    return p;
}

int hr_gpuidx_write(const char *path, const hr_gpuidx *g, hr_err *e) {
    if (!g->hot || g->n_layer < 1 || g->n_ff < 1) return hr_errf(e, "%s: GPU index is empty", path);
    const size_t nl = (size_t)g->n_layer, nf = (size_t)g->n_ff;
    /* Per layer: n_ff flags, then up to n_ff bucket ids; all alive until the write. */
    int32_t *buf = malloc(nl * nf * 2 * sizeof *buf);
    gguf_writer *w = buf ? gguf_writer_new(true) : NULL;
    if (!w) {
        free(buf);
        return hr_errf(e, "out of memory writing GPU index %s", path);
    }
    gguf_w_str(w, "general.architecture", HR_GPUIDX_ARCH);
    gguf_w_u32(w, HR_GPUIDX_ARCH ".block_count", (uint32_t)g->n_layer);
    gguf_w_u64(w, "split.vram_capacity", g->vram_capacity);
    char name[64];
    for (size_t il = 0; il < nl; il++) {
        int32_t *flags = buf + il * nf * 2, *bucket = flags + nf;
        for (size_t j = 0; j < nf; j++) flags[j] = g->hot[il * nf + j] ? 1 : 0;
        const int32_t k = hr_gpuidx_bucket(g, (int32_t)il, bucket);
        uint64_t ne_f[1] = {nf}, ne_b[1] = {(uint64_t)k};
        snprintf(name, sizeof name, "blk.%zu.gpu_idx", il);
        gguf_w_tensor(w, name, HR_I32_OLD, 1, ne_f, flags, nf * 4);
        snprintf(name, sizeof name, "blk.%zu.gpu_bucket", il);
        gguf_w_tensor(w, name, HR_I32_OLD, 1, ne_b, bucket, (uint64_t)k * 4);
    }
    int r = gguf_w_write(w, path, e);
    gguf_writer_free(w);
    free(buf);
    return r ? hr_errctx(e, "writing GPU index %s", path) : 0;
}

static int32_t i32_at(const gguf_tensor *t, uint64_t i) {
    int32_t v;
    memcpy(&v, (const uint8_t *)t->data + i * 4, 4);
    return v;
}

/* Tensor `pos` must be a 1-D I32 named blk.<il>.<what>. */
static int check_tensor(const gguf_file *f, uint64_t pos, int32_t il, const char *what, hr_err *e) {
    const gguf_tensor *t = &f->tensors[pos];
    char want[64];
    snprintf(want, sizeof want, "blk.%d.%s", il, what);
    if (!gguf_str_eq(t->name, want))
        return hr_errf(e, "tensor %llu is '%.*s', expected '%s' (tensors must be blk.N.gpu_idx, blk.N.gpu_bucket "
                       "for N = 0, 1, ... in numeric order)",
                       (unsigned long long)pos, (int)(t->name.len > 64 ? 64 : t->name.len), t->name.ptr, want);
    if (t->type != HR_I32_OLD && t->type != HR_I32)
        return hr_errf(e, "tensor '%s' has type %s (id %u), expected i32 (id 18)", want,
                       hr_type_name(t->type) ? hr_type_name(t->type) : "?", t->type);
    if (t->n_dims != 1) return hr_errf(e, "tensor '%s' has %u dimensions, expected 1", want, t->n_dims);
    return 0;
}

static int read_layer(const gguf_file *f, hr_gpuidx *g, int32_t il, hr_err *e) {
    const uint64_t pi = 2 * (uint64_t)il, pb = pi + 1;
    if (check_tensor(f, pi, il, "gpu_idx", e) || check_tensor(f, pb, il, "gpu_bucket", e)) return -1;
    const gguf_tensor *ti = &f->tensors[pi], *tb = &f->tensors[pb];
    if (ti->ne[0] != (uint64_t)g->n_ff)
        return hr_errf(e, "blk.%d.gpu_idx has %llu entries, but layer 0 has %d (n_ff)", il,
                       (unsigned long long)ti->ne[0], g->n_ff);
    uint8_t *h = g->hot + (size_t)il * g->n_ff;
    uint64_t k = 0;
    for (int32_t j = 0; j < g->n_ff; j++) {
        int32_t v = i32_at(ti, (uint64_t)j);
        if (v != 0 && v != 1) return hr_errf(e, "blk.%d.gpu_idx[%d] = %d (flags must be 0 or 1)", il, j, v);
        h[j] = (uint8_t)v;
        k += (uint64_t)v;
    }
    if (tb->ne[0] != k)
        return hr_errf(e, "blk.%d.gpu_bucket has %llu entries but blk.%d.gpu_idx flags %llu neurons", il,
                       (unsigned long long)tb->ne[0], il, (unsigned long long)k);
    for (uint64_t i = 0; i < k; i++) {
        int32_t v = i32_at(tb, i);
        if (v < 0 || v >= g->n_ff)
            return hr_errf(e, "blk.%d.gpu_bucket[%llu] = %d is not a neuron id (n_ff %d)", il, (unsigned long long)i, v,
                           g->n_ff);
        if (i > 0 && v <= i32_at(tb, i - 1))
            return hr_errf(e, "blk.%d.gpu_bucket is not sorted ascending without repeats (entry %llu = %d after %d)", il,
                           (unsigned long long)i, v, i32_at(tb, i - 1));
        if (!h[v]) return hr_errf(e, "blk.%d.gpu_bucket lists neuron %d, which blk.%d.gpu_idx does not flag", il, v, il);
    }
    return 0;
}

static int read_header(const gguf_file *f, uint64_t *cap, int32_t *n_layer, hr_err *e) {
    gguf_str arch;
    int rc = gguf_get_str(f, "general.architecture", &arch, e);
    if (rc < 0) return -1;
    if (rc == 0 && !gguf_str_eq(arch, HR_GPUIDX_ARCH))
        return hr_errf(e, "not a GPU index (general.architecture is '%.*s', expected '" HR_GPUIDX_ARCH "')",
                       (int)(arch.len > 64 ? 64 : arch.len), arch.ptr);
    rc = gguf_get_u64(f, "split.vram_capacity", cap, e);
    if (rc < 0) return -1;
    if (rc == 1) return hr_errf(e, "key 'split.vram_capacity' is missing (PowerInfer requires it)");
    if (f->n_tensors == 0 || f->n_tensors % 2 || f->n_tensors / 2 > GPUIDX_MAX_LAYERS)
        return hr_errf(e, "%llu tensors; a GPU index has exactly 2 per layer (gpu_idx, gpu_bucket)",
                       (unsigned long long)f->n_tensors);
    *n_layer = (int32_t)(f->n_tensors / 2);
    uint32_t bc;
    rc = gguf_get_u32(f, HR_GPUIDX_ARCH ".block_count", &bc, e);
    if (rc < 0) return -1;
    if (rc == 0 && bc != (uint32_t)*n_layer)
        return hr_errf(e, HR_GPUIDX_ARCH ".block_count is %u but the file has %llu tensors (%d layers)", bc,
                       (unsigned long long)f->n_tensors, *n_layer);
    return 0;
}

int hr_gpuidx_from_gguf(const gguf_file *f, hr_gpuidx *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    uint64_t cap = 0;
    int32_t n_layer = 0;
    if (read_header(f, &cap, &n_layer, e)) return -1;
    const gguf_tensor *t0 = &f->tensors[0];
    if (t0->ne[0] < 1 || t0->ne[0] > GPUIDX_MAX_FF)
        return hr_errf(e, "first tensor has %llu entries; expected n_ff flags", (unsigned long long)t0->ne[0]);
    hr_gpuidx g;
    if (hr_gpuidx_init(&g, n_layer, (int32_t)t0->ne[0], e)) return -1;
    g.vram_capacity = cap;
    for (int32_t il = 0; il < n_layer; il++)
        if (read_layer(f, &g, il, e)) {
            hr_gpuidx_free(&g);
            return -1;
        }
    *out = g;
    return 0;
}

int hr_gpuidx_read(const char *path, hr_gpuidx *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    gguf_file f;
    if (gguf_open(&f, path, e)) return hr_errctx(e, "GPU index %s", path);
    int r = hr_gpuidx_from_gguf(&f, out, e);
    gguf_close(&f);
    return r ? hr_errctx(e, "GPU index %s", path) : 0;
}
