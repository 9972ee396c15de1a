/* Reader and writer of the activation-statistics GGUF (docs/stats-format.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/gguf.h"
#include "formats/types.h"
#include "stats.h"

#define STATS_ARCH "hearth.stats"
/* Bounds that keep [n_layer][n_ff] allocations sane for any real model. */
#define STATS_MAX_LAYERS 4096
#define STATS_MAX_FF (1 << 24)

int hr_stats_init(hr_stats *s, int32_t n_layer, int32_t n_ff, hr_err *e) {
    memset(s, 0, sizeof *s);
    if (n_layer < 1 || n_layer > STATS_MAX_LAYERS || n_ff < 1 || n_ff > STATS_MAX_FF)
        return hr_errf(e, "bad statistics shape: %d layers x %d neurons", n_layer, n_ff);
    s->counts = calloc((size_t)n_layer * (size_t)n_ff, sizeof *s->counts);
    if (!s->counts) return hr_errf(e, "out of memory for %d x %d activation counts", n_layer, n_ff);
    s->n_layer = n_layer, s->n_ff = n_ff;
    return 0;
}

int hr_stats_path(const char *model_path, char *buf, size_t cap) {
    size_t n = strlen(model_path);
    if (n >= 5 && !strcmp(model_path + n - 5, ".gguf")) n -= 5;
    int w = snprintf(buf, cap, "%.*s.stats.gguf", (int)n, model_path);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

void hr_stats_free(hr_stats *s) {
    if (!s) return;
    free(s->counts), free(s->recall), free(s->precision), free(s->rank);
    memset(s, 0, sizeof *s);
}

int hr_stats_write(const char *path, const hr_stats *s, hr_err *e) {
    if (!s->counts || s->n_layer < 1 || s->n_ff < 1) return hr_errf(e, "%s: statistics are empty", path);
    for (int64_t i = 0; i < (int64_t)s->n_layer * s->n_ff; i++)
        if (s->counts[i] > s->n_tokens || s->counts[i] > INT32_MAX)
            return hr_errf(e, "%s: count %u of layer %lld exceeds the %llu tokens", path, s->counts[i],
                           (long long)(i / s->n_ff), (unsigned long long)s->n_tokens);
    gguf_writer *w = gguf_writer_new(false);
    if (!w) return hr_errf(e, "out of memory");
    gguf_w_str(w, "general.architecture", STATS_ARCH);
    gguf_w_u32(w, "hearth.stats.n_layer", (uint32_t)s->n_layer);
    gguf_w_u32(w, "hearth.stats.n_ff", (uint32_t)s->n_ff);
    gguf_w_u64(w, "hearth.stats.n_tokens", s->n_tokens);
    gguf_w_str(w, "hearth.stats.model", s->model);
    if (s->recall) gguf_w_arr_f32(w, "hearth.stats.recall", s->recall, (uint64_t)s->n_layer);
    if (s->precision) gguf_w_arr_f32(w, "hearth.stats.precision", s->precision, (uint64_t)s->n_layer);
    if (s->rank) gguf_w_arr_raw(w, "hearth.stats.rank", GGUF_VT_UINT32, s->rank, (uint64_t)s->n_layer);
    char name[64];
    for (int32_t l = 0; l < s->n_layer; l++) {
        uint64_t ne[1] = {(uint64_t)s->n_ff};
        snprintf(name, sizeof name, "blk.%d.act_count", l);
        /* counts <= INT32_MAX (checked above), so the uint32 bits are the I32 values */
        gguf_w_tensor(w, name, HR_I32, 1, ne, s->counts + (size_t)l * s->n_ff, (uint64_t)s->n_ff * 4);
    }
    int r = gguf_w_write(w, path, e);
    gguf_writer_free(w);
    return r ? hr_errctx(e, "writing statistics %s", path) : 0;
}

/* Optional per-layer array: absent is fine; present must have n_layer numeric elements. */
static int read_layer_arr(const gguf_file *f, const char *key, int32_t n_layer, bool is_rank, void **out, hr_err *e) {
    const gguf_array *a = NULL;
    int rc = gguf_get_arr(f, key, &a, e);
    if (rc == 1) return 0;
    if (rc) return -1;
    if (a->n != (uint64_t)n_layer || !a->raw || !gguf_vtype_size(a->type) || a->type == GGUF_VT_BOOL)
        return hr_errf(e, "key '%s' must be a numeric array of %d elements (one per layer)", key, n_layer);
    void *v = calloc((size_t)n_layer, 4);
    if (!v) return hr_errf(e, "out of memory");
    for (int32_t l = 0; l < n_layer; l++) {
        double x = gguf_arr_num(a, (uint64_t)l);
        if (is_rank) {
            if (!(x >= 0 && x <= UINT32_MAX) || x != floor(x)) {
                free(v);
                return hr_errf(e, "key '%s': element %d (%g) is not a rank", key, l, x);
            }
            ((uint32_t *)v)[l] = (uint32_t)x;
        } else {
            if (!(x >= 0 && x <= 1)) {
                free(v);
                return hr_errf(e, "key '%s': element %d (%g) is not a fraction in [0, 1]", key, l, x);
            }
            ((float *)v)[l] = (float)x;
        }
    }
    *out = v;
    return 0;
}

static int read_counts(const gguf_file *f, hr_stats *s, hr_err *e) {
    char name[64];
    uint64_t n_act = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_str nm = f->tensors[i].name;
        if (nm.len > 10 && !memcmp(nm.ptr + nm.len - 10, ".act_count", 10)) n_act++;
    }
    if (n_act != (uint64_t)s->n_layer)
        return hr_errf(e, "%llu act_count tensors for %d layers", (unsigned long long)n_act, s->n_layer);
    for (int32_t l = 0; l < s->n_layer; l++) {
        snprintf(name, sizeof name, "blk.%d.act_count", l);
        const gguf_tensor *t = gguf_find_tensor(f, name);
        if (!t) return hr_errf(e, "tensor %s is missing", name);
        if (t->type != HR_I32) return hr_errf(e, "tensor %s has type %s, expected i32", name, hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
        if (t->n_dims != 1 || t->ne[0] != (uint64_t)s->n_ff)
            return hr_errf(e, "tensor %s has shape {%llu, %llu}, expected {%d} (n_ff)", name, (unsigned long long)t->ne[0],
                           (unsigned long long)t->ne[1], s->n_ff);
        uint32_t *dst = s->counts + (size_t)l * s->n_ff;
        memcpy(dst, t->data, (size_t)s->n_ff * 4);
        for (int32_t j = 0; j < s->n_ff; j++) {
            int32_t v;
            memcpy(&v, &dst[j], 4);
            if (v < 0 || (uint64_t)v > s->n_tokens)
                return hr_errf(e, "layer %d neuron %d: count %d is outside [0, n_tokens = %llu]", l, j, v,
                               (unsigned long long)s->n_tokens);
        }
    }
    return 0;
}

static int read_header(const gguf_file *f, hr_stats *s, hr_err *e) {
    gguf_str arch;
    uint32_t nl = 0, nf = 0;
    uint64_t nt = 0;
    int rc = gguf_get_str(f, "general.architecture", &arch, e);
    if (rc < 0) return -1;
    if (rc == 1 || !gguf_str_eq(arch, STATS_ARCH)) return hr_errf(e, "not a statistics file (general.architecture is not '" STATS_ARCH "')");
    const char *req[3] = {"hearth.stats.n_layer", "hearth.stats.n_ff", "hearth.stats.n_tokens"};
    int r0 = gguf_get_u32(f, req[0], &nl, e);
    if (r0 < 0) return -1;
    int r1 = r0 ? 0 : gguf_get_u32(f, req[1], &nf, e);
    if (r1 < 0) return -1;
    int r2 = r0 || r1 ? 0 : gguf_get_u64(f, req[2], &nt, e);
    if (r2 < 0) return -1;
    if (r0 || r1 || r2) return hr_errf(e, "key '%s' is missing", req[r0 ? 0 : r1 ? 1 : 2]);
    if (nl < 1 || nl > STATS_MAX_LAYERS || nf < 1 || nf > STATS_MAX_FF)
        return hr_errf(e, "implausible shape: %u layers x %u neurons", nl, nf);
    if (hr_stats_init(s, (int32_t)nl, (int32_t)nf, e)) return -1;
    s->n_tokens = nt;
    gguf_str model;
    if (gguf_get_str(f, "hearth.stats.model", &model, NULL) == 0) {
        size_t n = model.len < sizeof s->model - 1 ? (size_t)model.len : sizeof s->model - 1;
        memcpy(s->model, model.ptr, n);
        s->model[n] = 0;
    }
    return 0;
}

int hr_stats_read(const char *path, hr_stats *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    gguf_file f;
    if (gguf_open(&f, path, e)) return hr_errctx(e, "statistics file %s", path);
    hr_stats s;
    memset(&s, 0, sizeof s);
    int r = read_header(&f, &s, e);
    if (!r) r = read_counts(&f, &s, e);
    void *rec = NULL, *prec = NULL, *rank = NULL;
    if (!r) r = read_layer_arr(&f, "hearth.stats.recall", s.n_layer, false, &rec, e);
    if (!r) r = read_layer_arr(&f, "hearth.stats.precision", s.n_layer, false, &prec, e);
    if (!r) r = read_layer_arr(&f, "hearth.stats.rank", s.n_layer, true, &rank, e);
    s.recall = rec, s.precision = prec, s.rank = rank;
    gguf_close(&f);
    if (r) {
        hr_stats_free(&s);
        return hr_errctx(e, "statistics file %s", path);
    }
    *out = s;
    return 0;
}
