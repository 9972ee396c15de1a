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
#define STATS_MAX_EXPERTS 4096

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

int hr_stats_init_moe(hr_stats *s, int32_t n_layer, int32_t n_expert, int32_t n_expert_used, int32_t n_ff, bool neurons, hr_err *e) {
    memset(s, 0, sizeof *s);
    if (n_layer < 1 || n_layer > STATS_MAX_LAYERS || n_ff < 1 || n_ff > STATS_MAX_FF || n_expert < 1 ||
        n_expert > STATS_MAX_EXPERTS || n_expert_used < 1 || n_expert_used > n_expert ||
        (int64_t)n_expert * n_ff > STATS_MAX_FF)
        return hr_errf(e, "bad statistics shape: %d layers x %d experts (%d used) x %d neurons", n_layer, n_expert, n_expert_used, n_ff);
    const size_t ne = (size_t)n_layer * (size_t)n_expert;
    s->expert_counts = calloc(ne, sizeof *s->expert_counts);
    s->counts = neurons ? calloc(ne * (size_t)n_ff, sizeof *s->counts) : NULL;
    if (!s->expert_counts || (neurons && !s->counts)) {
        free(s->expert_counts), free(s->counts);
        memset(s, 0, sizeof *s);
        return hr_errf(e, "out of memory for %d x %d x %d expert counts", n_layer, n_expert, n_ff);
    }
    s->n_layer = n_layer, s->n_ff = n_ff, s->n_expert = n_expert, s->n_expert_used = n_expert_used;
    return 0;
}

void hr_stats_free(hr_stats *s) {
    if (!s) return;
    free(s->counts), free(s->recall), free(s->precision), free(s->rank), free(s->expert_counts);
    memset(s, 0, sizeof *s);
}

/* Elements of one layer's act_count: n_ff, times n_expert for mixtures of experts. */
static int64_t layer_elems(const hr_stats *s) { return (int64_t)s->n_ff * (s->n_expert ? s->n_expert : 1); }

/* The most act_count element i of layer l may hold: the tokens, or those routed to its expert. */
static uint64_t count_bound(const hr_stats *s, int32_t l, int64_t i) {
    return s->n_expert ? s->expert_counts[(size_t)l * (size_t)s->n_expert + (size_t)(i / s->n_ff)] : s->n_tokens;
}

/* Routing counts: each <= n_tokens, each layer's sum n_tokens * n_expert_used. */
static int check_routing(const hr_stats *s, hr_err *e) {
    for (int32_t l = 0; l < s->n_layer; l++) {
        uint64_t sum = 0;
        for (int32_t x = 0; x < s->n_expert; x++) {
            const uint64_t v = s->expert_counts[(size_t)l * (size_t)s->n_expert + (size_t)x];
            if (v > s->n_tokens) return hr_errf(e, "layer %d expert %d: %llu routed tokens exceed the %llu tokens", l, x, (unsigned long long)v, (unsigned long long)s->n_tokens);
            sum += v;
        }
        if (sum != s->n_tokens * (uint64_t)s->n_expert_used)
            return hr_errf(e, "layer %d: routed tokens sum to %llu, expected %llu tokens x %d experts used", l, (unsigned long long)sum,
                           (unsigned long long)s->n_tokens, s->n_expert_used);
    }
    return 0;
}

static void write_moe(gguf_writer *w, const hr_stats *s) {
    char name[64];
    gguf_w_u32(w, "hearth.stats.n_expert", (uint32_t)s->n_expert);
    gguf_w_u32(w, "hearth.stats.n_expert_used", (uint32_t)s->n_expert_used);
    for (int32_t l = 0; l < s->n_layer; l++) {
        uint64_t ne[1] = {(uint64_t)s->n_expert};
        snprintf(name, sizeof name, "blk.%d.expert_count", l);
        gguf_w_tensor(w, name, HR_I32, 1, ne, s->expert_counts + (size_t)l * (size_t)s->n_expert, (uint64_t)s->n_expert * 4);
    }
}

int hr_stats_write(const char *path, const hr_stats *s, hr_err *e) {
    if ((!s->counts && !s->n_expert) || (s->n_expert && !s->expert_counts) || s->n_layer < 1 || s->n_ff < 1)
        return hr_errf(e, "%s: statistics are empty", path);
    if (s->n_expert && check_routing(s, e)) return hr_errctx(e, "%s", path);
    for (int64_t i = 0; s->counts && i < (int64_t)s->n_layer * layer_elems(s); i++)
        if (s->counts[i] > count_bound(s, (int32_t)(i / layer_elems(s)), i % layer_elems(s)) || s->counts[i] > INT32_MAX)
            return hr_errf(e, "%s: count %u of layer %lld exceeds the %llu tokens%s", path, s->counts[i],
                           (long long)(i / layer_elems(s)), (unsigned long long)count_bound(s, (int32_t)(i / layer_elems(s)), i % layer_elems(s)),
                           s->n_expert ? " routed to its expert" : "");
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
    if (s->n_expert) write_moe(w, s);
    char name[64];
    for (int32_t l = 0; s->counts && l < s->n_layer; l++) {
        uint64_t ne[2] = {(uint64_t)s->n_ff, (uint64_t)(s->n_expert ? s->n_expert : 1)};
        snprintf(name, sizeof name, "blk.%d.act_count", l);
        /* counts <= INT32_MAX (checked above), so the uint32 bits are the I32 values */
        gguf_w_tensor(w, name, HR_I32, s->n_expert ? 2 : 1, ne, s->counts + (size_t)l * (size_t)layer_elems(s),
                      (uint64_t)layer_elems(s) * 4);
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

static uint64_t count_suffix(const gguf_file *f, const char *suffix) {
    const size_t n = strlen(suffix);
    uint64_t k = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_str nm = f->tensors[i].name;
        k += nm.len > n && !memcmp(nm.ptr + nm.len - n, suffix, n);
    }
    return k;
}

/* Layer l's I32 tensor blk.l.<what> {n0[, n1]} into dst, each value in [0, bound(i)]. */
static int read_i32(const gguf_file *f, const hr_stats *s, int32_t l, const char *what, uint64_t n0, uint64_t n1, uint32_t *dst, hr_err *e) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s", l, what);
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) return hr_errf(e, "tensor %s is missing", name);
    if (t->type != HR_I32) return hr_errf(e, "tensor %s has type %s, expected i32", name, hr_type_name(t->type) ? hr_type_name(t->type) : "unknown");
    const bool routing = !strcmp(what, "expert_count");
    if (t->n_dims != (n1 > 1 ? 2u : 1u) || t->ne[0] != n0 || t->ne[1] != n1) {
        if (n1 > 1)
            return hr_errf(e, "tensor %s has shape {%llu, %llu}, expected {%llu, %llu} (n_ff, n_expert)", name, (unsigned long long)t->ne[0],
                           (unsigned long long)t->ne[1], (unsigned long long)n0, (unsigned long long)n1);
        return hr_errf(e, "tensor %s has shape {%llu, %llu}, expected {%llu} (%s)", name, (unsigned long long)t->ne[0],
                       (unsigned long long)t->ne[1], (unsigned long long)n0, routing ? "n_expert" : "n_ff");
    }
    memcpy(dst, t->data, (size_t)(n0 * n1) * 4);
    for (uint64_t j = 0; j < n0 * n1; j++) {
        int32_t v;
        memcpy(&v, &dst[j], 4);
        const uint64_t bound = routing ? s->n_tokens : count_bound(s, l, (int64_t)j);
        if (v < 0 || (uint64_t)v > bound) {
            if (s->n_expert && !routing)
                return hr_errf(e, "layer %d expert %llu neuron %llu: count %d is outside [0, tokens routed to the expert = %llu]", l,
                               (unsigned long long)(j / n0), (unsigned long long)(j % n0), v, (unsigned long long)bound);
            return hr_errf(e, "layer %d %s %llu: count %d is outside [0, n_tokens = %llu]", l, routing ? "expert" : "neuron",
                           (unsigned long long)j, v, (unsigned long long)bound);
        }
    }
    return 0;
}

static int read_counts(const gguf_file *f, hr_stats *s, hr_err *e) {
    const uint64_t n_act = count_suffix(f, ".act_count");
    if (s->n_expert) {
        const uint64_t n_ec = count_suffix(f, ".expert_count");
        if (n_ec != (uint64_t)s->n_layer) return hr_errf(e, "%llu expert_count tensors for %d layers", (unsigned long long)n_ec, s->n_layer);
        for (int32_t l = 0; l < s->n_layer; l++)
            if (read_i32(f, s, l, "expert_count", (uint64_t)s->n_expert, 1, s->expert_counts + (size_t)l * (size_t)s->n_expert, e)) return -1;
        if (check_routing(s, e)) return -1;
        if (!s->counts && n_act) return hr_errf(e, "%llu act_count tensors for %d layers", (unsigned long long)n_act, s->n_layer);
        if (!s->counts) return 0;
    }
    if (n_act != (uint64_t)s->n_layer)
        return hr_errf(e, "%llu act_count tensors for %d layers", (unsigned long long)n_act, s->n_layer);
    for (int32_t l = 0; l < s->n_layer; l++)
        if (read_i32(f, s, l, "act_count", (uint64_t)s->n_ff, (uint64_t)(s->n_expert ? s->n_expert : 1),
                     s->counts + (size_t)l * (size_t)layer_elems(s), e))
            return -1;
    return 0;
}

/* Mixture-of-experts keys: absent for dense statistics (*moe false). */
static int read_moe_keys(const gguf_file *f, uint32_t *ne, uint32_t *nu, bool *moe, hr_err *e) {
    int r = gguf_get_u32(f, "hearth.stats.n_expert", ne, e);
    *moe = r == 0;
    if (r < 0 || !*moe) return r < 0 ? -1 : 0;
    r = gguf_get_u32(f, "hearth.stats.n_expert_used", nu, e);
    if (r < 0) return -1;
    if (r == 1) return hr_errf(e, "key 'hearth.stats.n_expert_used' is missing (the statistics have hearth.stats.n_expert)");
    if (*ne < 1 || *ne > STATS_MAX_EXPERTS || *nu < 1 || *nu > *ne) return hr_errf(e, "implausible experts: %u used of %u", *nu, *ne);
    return 0;
}

static int read_header(const gguf_file *f, hr_stats *s, bool allow_moe, hr_err *e) {
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
    uint32_t ne = 0, nu = 0;
    bool moe = false;
    if (read_moe_keys(f, &ne, &nu, &moe, e)) return -1;
    if (moe && !allow_moe)
        return hr_errf(e, "these are the statistics of a mixture of experts (%u experts); placement of experts is not supported yet", ne);
    if (moe ? hr_stats_init_moe(s, (int32_t)nl, (int32_t)ne, (int32_t)nu, (int32_t)nf, count_suffix(f, ".act_count") > 0, e)
            : hr_stats_init(s, (int32_t)nl, (int32_t)nf, e))
        return -1;
    s->n_tokens = nt;
    gguf_str model;
    if (gguf_get_str(f, "hearth.stats.model", &model, NULL) == 0) {
        size_t n = model.len < sizeof s->model - 1 ? (size_t)model.len : sizeof s->model - 1;
        memcpy(s->model, model.ptr, n);
        s->model[n] = 0;
    }
    return 0;
}

static int read_file(const char *path, hr_stats *out, bool allow_moe, hr_err *e) {
    memset(out, 0, sizeof *out);
    gguf_file f;
    if (gguf_open(&f, path, e)) return hr_errctx(e, "statistics file %s", path);
    hr_stats s;
    memset(&s, 0, sizeof s);
    int r = read_header(&f, &s, allow_moe, e);
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

int hr_stats_read(const char *path, hr_stats *out, hr_err *e) { return read_file(path, out, false, e); }
int hr_stats_read_any(const char *path, hr_stats *out, hr_err *e) { return read_file(path, out, true, e); }
