/* The CPU standing in for a device: the arena is host memory, every operation runs at
 * enqueue time with the CPU kernels (backends/cpu) on views of arena bytes, and every
 * offset is checked against the arena, so an accounting mistake in the engine is an
 * error here rather than a crash on a real device. */
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_oai.h"
#include "backends/cpu/sparse.h"
#include "backends/device.h"
#include "formats/types.h"
#include "standin.h"
#include "standin_impl.h"

typedef struct standin {
    uint64_t capacity;
    uint8_t *arena;
    uint64_t size; /* 0 until reserve */
    hr_cpu cpu;
    hr_sparse_ws ws;
    float *scores;    /* attention: [n_threads][n_ctx] */
    uint8_t *qprep;   /* attention: [n_threads][stride] */
    size_t scores_n, qprep_stride;
    /* the copy stream: copies waiting to land (only with a lag; tests), oldest first */
    struct sd_copy { uint64_t dst, bytes, ticket; const void *src; int32_t polls; } *copies;
    size_t n_copies, cap_copies;
    uint64_t issued, landed;
    int32_t copy_lag;
} standin;

static standin *S(hr_dev *d) { return d->impl; }

/* Pointer to bytes [off, off + n) of the arena, or NULL with a message. */
static void *span(hr_dev *d, uint64_t off, uint64_t n, const char *what, hr_err *e) {
    standin *s = S(d);
    if (!s->arena) return hr_errf(e, "standin: %s before the arena was reserved", what), NULL;
    if (off > s->size || n > s->size - off) {
        hr_errf(e, "standin: %s at offset %llu (+%llu bytes) is outside the %llu-byte arena", what,
                (unsigned long long)off, (unsigned long long)n, (unsigned long long)s->size);
        return NULL;
    }
    return s->arena + off;
}

/* F32 / I32 buffers must also be 4-byte aligned, as the CPU kernels read them as such. */
static float *fspan(hr_dev *d, uint64_t off, uint64_t n_elem, const char *what, hr_err *e) {
    if (off % 4) return hr_errf(e, "standin: %s at offset %llu is not 4-byte aligned", what, (unsigned long long)off), NULL;
    if (n_elem > UINT64_MAX / 4) return hr_errf(e, "standin: %s of %llu elements is too large", what, (unsigned long long)n_elem), NULL;
    return span(d, off, n_elem * 4, what, e);
}

static int mat_view(hr_dev *d, const hr_dmat *W, hr_mat *m, const char *what, hr_err *e) {
    if (W->type >= HR_TYPE_MAX || W->n_in < 1 || W->n_out < 1 || W->row_bytes != hr_row_bytes(W->type, (uint64_t)W->n_in))
        return hr_errf(e, "standin: %s: bad matrix (type %u, %lld x %lld, row bytes %zu)", what, W->type,
                       (long long)W->n_out, (long long)W->n_in, W->row_bytes);
    const void *p = span(d, W->off, (uint64_t)W->n_out * W->row_bytes, what, e);
    if (!p) return -1;
    *m = (hr_mat){.type = W->type, .n_in = W->n_in, .n_out = W->n_out, .row_bytes = W->row_bytes, .data = p};
    return 0;
}

static int check_idx(const int32_t *idx, int64_t n_idx, int64_t n_out, const char *what, hr_err *e) {
    for (int64_t i = 0; i < n_idx; i++)
        if (idx[i] < 0 || idx[i] >= n_out)
            return hr_errf(e, "standin: %s: index %d at %lld is outside [0, %lld)", what, idx[i], (long long)i, (long long)n_out);
    return 0;
}

static int sd_mem_info(hr_dev *d, uint64_t *free_b, uint64_t *total_b, hr_err *e) {
    (void)e;
    standin *s = S(d);
    /* Like a CUDA context, the overhead is taken from the moment the device is open. */
    const uint64_t used = s->size + HR_STANDIN_OVERHEAD;
    *total_b = s->capacity;
    *free_b = used < s->capacity ? s->capacity - used : 0;
    return 0;
}

static uint64_t sd_overhead(const hr_dev *d) {
    (void)d;
    return HR_STANDIN_OVERHEAD;
}

static int sd_reserve(hr_dev *d, uint64_t bytes, hr_err *e) {
    standin *s = S(d);
    if (s->arena) return hr_errf(e, "standin: the arena is already reserved (%llu bytes)", (unsigned long long)s->size);
    if (bytes == 0) return hr_errf(e, "standin: cannot reserve an empty arena");
    if (bytes > s->capacity || s->capacity - bytes < HR_STANDIN_OVERHEAD || bytes > SIZE_MAX)
        return hr_errf(e, "standin: out of memory reserving %llu bytes (+%u overhead) of %llu", (unsigned long long)bytes,
                       HR_STANDIN_OVERHEAD, (unsigned long long)s->capacity);
    s->arena = calloc(1, (size_t)bytes);
    if (!s->arena) return hr_errf(e, "standin: out of host memory reserving %llu bytes", (unsigned long long)bytes);
    s->size = bytes;
    return 0;
}

static void *sd_host_alloc(hr_dev *d, size_t bytes) {
    (void)d;
    return calloc(1, bytes ? bytes : 1);
}

static void sd_host_free(hr_dev *d, void *p) {
    (void)d;
    free(p);
}

static int sd_to_dev(hr_dev *d, uint64_t dst, const void *src, uint64_t bytes, hr_err *e) {
    void *p = span(d, dst, bytes, "to_dev", e);
    if (!p) return -1;
    if (bytes) memcpy(p, src, (size_t)bytes);
    return 0;
}

static int sd_to_host(hr_dev *d, void *dst, uint64_t src, uint64_t bytes, hr_err *e) {
    const void *p = span(d, src, bytes, "to_host", e);
    if (!p) return -1;
    if (bytes) memcpy(dst, p, (size_t)bytes);
    return 0;
}

static int sd_matmul(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t Y, hr_err *e) {
    hr_mat m;
    if (n_tok < 1 || mat_view(d, W, &m, "matmul weights", e)) return n_tok < 1 ? hr_errf(e, "standin: matmul of %lld tokens", (long long)n_tok) : -1;
    float *x = fspan(d, X, (uint64_t)(n_tok * W->n_in), "matmul input", e);
    float *y = x ? fspan(d, Y, (uint64_t)(n_tok * W->n_out), "matmul output", e) : NULL;
    return y ? hr_matmul(&S(d)->cpu, &m, x, n_tok, y, e) : -1;
}

static int sd_gather(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx, uint64_t Y,
                     hr_err *e) {
    hr_mat m;
    if (n_tok < 1 || n_idx < 0) return hr_errf(e, "standin: gather_matmul of %lld tokens, %lld rows", (long long)n_tok, (long long)n_idx);
    if (mat_view(d, W, &m, "gather_matmul weights", e)) return -1;
    const int32_t *ix = (const int32_t *)fspan(d, idx, (uint64_t)n_idx, "gather_matmul index", e);
    float *x = ix ? fspan(d, X, (uint64_t)(n_tok * W->n_in), "gather_matmul input", e) : NULL;
    float *y = x ? fspan(d, Y, (uint64_t)(n_tok * n_idx), "gather_matmul output", e) : NULL;
    if (!y || check_idx(ix, n_idx, W->n_out, "gather_matmul", e)) return -1;
    return n_idx ? hr_gather_matmul(&S(d)->cpu, &m, x, n_tok, ix, n_idx, y, e) : 0;
}

/* For gather_matmul_masked (standin_thr.c): the same view, checks and kernel as sd_gather. */
int hr_standin_gather_rows(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, const int32_t *sel, int64_t k, float *Y,
                           hr_err *e) {
    hr_mat m;
    if (mat_view(d, W, &m, "gather_matmul_masked weights", e)) return -1;
    float *x = fspan(d, X, (uint64_t)(n_tok * W->n_in), "gather_matmul_masked input", e);
    if (!x || check_idx(sel, k, W->n_out, "gather_matmul_masked", e)) return -1;
    return hr_gather_matmul(&S(d)->cpu, &m, x, n_tok, sel, k, Y, e);
}

static int sd_axpy(hr_dev *d, const hr_dmat *Wt, uint64_t A, int64_t n_tok, uint64_t idx, int64_t n_idx, uint64_t Y,
                   hr_err *e) {
    hr_mat m;
    if (n_tok < 1 || n_idx < 0) return hr_errf(e, "standin: sparse_axpy of %lld tokens, %lld rows", (long long)n_tok, (long long)n_idx);
    if (mat_view(d, Wt, &m, "sparse_axpy weights", e)) return -1;
    const int32_t *ix = (const int32_t *)fspan(d, idx, (uint64_t)n_idx, "sparse_axpy index", e);
    float *a = ix ? fspan(d, A, (uint64_t)(n_tok * n_idx), "sparse_axpy coefficients", e) : NULL;
    float *y = a ? fspan(d, Y, (uint64_t)(n_tok * Wt->n_in), "sparse_axpy output", e) : NULL;
    if (!y || check_idx(ix, n_idx, Wt->n_out, "sparse_axpy", e)) return -1;
    if (!n_idx) {
        memset(y, 0, sizeof(float) * (size_t)(n_tok * Wt->n_in));
        return 0;
    }
    standin *s = S(d);
    return hr_sparse_axpy_ws(&s->cpu, &s->ws, &m, a, n_tok, ix, n_idx, y, e);
}

static int sd_rmsnorm(hr_dev *d, uint64_t X, uint64_t w, int64_t n, int64_t n_tok, float eps, uint64_t Y, hr_err *e) {
    if (n < 1 || n_tok < 1) return hr_errf(e, "standin: rmsnorm of %lld x %lld", (long long)n_tok, (long long)n);
    float *x = fspan(d, X, (uint64_t)(n * n_tok), "rmsnorm input", e);
    const float *wt = x ? fspan(d, w, (uint64_t)n, "rmsnorm weights", e) : NULL;
    float *y = wt ? fspan(d, Y, (uint64_t)(n * n_tok), "rmsnorm output", e) : NULL;
    if (!y) return -1;
    for (int64_t t = 0; t < n_tok; t++) hr_rmsnorm(y + t * n, x + t * n, wt, n, eps);
    return 0;
}

static int sd_rope(hr_dev *d, uint64_t X, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                   const int32_t *pos, float base, float freq_scale, bool neox, const hr_dev_rope *ext, hr_err *e) {
    if (n_tok < 1 || n_head < 1 || head_dim < 1 || n_rot < 0 || n_rot > head_dim || n_rot % 2 || n_rot > 2048)
        return hr_errf(e, "standin: rope of %lld tokens, %d heads of %d, %d rotated", (long long)n_tok, n_head, head_dim, n_rot);
    float *x = fspan(d, X, (uint64_t)(n_tok * n_head * head_dim), "rope input", e);
    if (!x) return -1;
    const float *ff = NULL;
    if (ext && ext->freq_factors != UINT64_MAX && !(ff = fspan(d, ext->freq_factors, (uint64_t)(n_rot / 2), "rope factors", e)))
        return -1;
    const hr_rope_yarn y = ext ? (hr_rope_yarn){ext->ext_factor, ext->attn_factor, {ext->corr_dims[0], ext->corr_dims[1]}}
                               : (hr_rope_yarn){0.0f, 1.0f, {0.0f, 0.0f}};
    for (int64_t t = 0; t < n_tok; t++)
        hr_rope_ext(x + t * n_head * head_dim, n_head, head_dim, n_rot, pos[t], base, freq_scale, neox, ff, ext ? &y : NULL);
    return 0;
}

static int sd_add_bias(hr_dev *d, uint64_t b, int64_t n, int64_t n_tok, uint64_t Y, hr_err *e) {
    if (n < 0 || n_tok < 0) return hr_errf(e, "standin: add_bias of %lld x %lld", (long long)n_tok, (long long)n);
    const float *bv = fspan(d, b, (uint64_t)n, "add_bias bias", e);
    float *y = bv ? fspan(d, Y, (uint64_t)(n * n_tok), "add_bias output", e) : NULL;
    if (!y) return -1;
    /* The CPU's add_bias (engine/forward.c): one float addition per element. */
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n; i++) y[t * n + i] += bv[i];
    return 0;
}

static int sd_swiglu_oai(hr_dev *d, uint64_t G, uint64_t U, int64_t n, float alpha, float limit, uint64_t H, hr_err *e) {
    if (n < 0) return hr_errf(e, "standin: swiglu_oai of %lld elements", (long long)n);
    const float *g = fspan(d, G, (uint64_t)n, "swiglu_oai gate", e);
    const float *u = g ? fspan(d, U, (uint64_t)n, "swiglu_oai up", e) : NULL;
    float *h = u ? fspan(d, H, (uint64_t)n, "swiglu_oai output", e) : NULL;
    if (!h) return -1;
    hr_swiglu_oai(h, g, u, n, alpha, limit);
    return 0;
}

static int sd_ffn_act(hr_dev *d, uint64_t G, uint64_t U, int64_t n, int act, uint64_t H, hr_err *e) {
    if (n < 0) return hr_errf(e, "standin: ffn_act of %lld elements", (long long)n);
    const float *g = G == UINT64_MAX ? NULL : fspan(d, G, (uint64_t)n, "ffn_act gate", e);
    if (G != UINT64_MAX && !g) return -1;
    const float *u = fspan(d, U, (uint64_t)n, "ffn_act up", e);
    float *h = u ? fspan(d, H, (uint64_t)n, "ffn_act output", e) : NULL;
    if (!h) return -1;
    if (act < 0 || act >= HR_ACT_COUNT) return hr_errf(e, "standin: ffn_act: activation %d is unknown", act);
    if (act < HR_ACT_RELU && !g) return hr_errf(e, "standin: ffn_act: activation %d needs a gate", act);
    hr_ffn_act(h, g, u, n, (hr_act)act);
    return 0;
}

static int sd_apply_mask(hr_dev *d, uint64_t A, uint64_t mask, int64_t n_tok, int64_t n, hr_err *e) {
    if (n_tok < 0 || n < 0) return hr_errf(e, "standin: apply_mask of %lld x %lld", (long long)n_tok, (long long)n);
    float *a = fspan(d, A, (uint64_t)(n_tok * n), "apply_mask values", e);
    const uint8_t *m = a ? span(d, mask, (uint64_t)(n_tok * n), "apply_mask mask", e) : NULL;
    if (!m) return -1;
    for (int64_t i = 0; i < n_tok * n; i++)
        if (!m[i]) a[i] = 0.0f;
    return 0;
}

static int sd_add(hr_dev *d, uint64_t X, int64_t n, uint64_t Y, hr_err *e) {
    if (n < 0) return hr_errf(e, "standin: add of %lld elements", (long long)n);
    const float *x = fspan(d, X, (uint64_t)n, "add input", e);
    float *y = x ? fspan(d, Y, (uint64_t)n, "add output", e) : NULL;
    if (!y) return -1;
    /* The CPU's add_into (engine/forward.c) exactly: one float addition per element. */
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
    return 0;
}

static int sd_sync(hr_dev *d, hr_err *e) {
    (void)d, (void)e;
    return 0;
}

/* The copy stream. Without a lag a copy lands at once (the stand-in is synchronous);
 * with one it waits in order, so an engine that used the destination or reused the
 * source before copy_done said so would compute with stale bytes. */
static int sd_copy_async(hr_dev *d, uint64_t dst, const void *src, uint64_t bytes, uint64_t *ticket, hr_err *e) {
    standin *s = S(d);
    void *p = span(d, dst, bytes, "copy_async", e);
    if (!p) return -1;
    if (!s->copy_lag) {
        if (bytes) memcpy(p, src, (size_t)bytes);
        *ticket = s->landed = ++s->issued;
        return 0;
    }
    if (s->n_copies == s->cap_copies) {
        const size_t cap = s->cap_copies ? 2 * s->cap_copies : 16;
        struct sd_copy *c = realloc(s->copies, cap * sizeof *c);
        if (!c) return hr_errf(e, "standin: out of memory queueing a copy");
        s->copies = c, s->cap_copies = cap;
    }
    *ticket = ++s->issued;
    s->copies[s->n_copies++] = (struct sd_copy){dst, bytes, *ticket, src, 0};
    return 0;
}

static int sd_copy_done(hr_dev *d, uint64_t ticket, bool *done, hr_err *e) {
    standin *s = S(d);
    if (ticket == 0 || ticket > s->issued) return hr_errf(e, "standin: copy_done for ticket %llu of %llu issued", (unsigned long long)ticket, (unsigned long long)s->issued);
    *done = ticket <= s->landed;
    if (*done) return 0;
    size_t n = 0;
    while (n < s->n_copies && s->copies[n].ticket < ticket) n++;
    if (++s->copies[n].polls <= s->copy_lag) return 0;
    for (size_t i = 0; i <= n; i++) /* in order, as one stream: everything before lands too */
        if (s->copies[i].bytes) memcpy(s->arena + s->copies[i].dst, s->copies[i].src, (size_t)s->copies[i].bytes);
    memmove(s->copies, s->copies + n + 1, (s->n_copies - n - 1) * sizeof *s->copies);
    s->n_copies -= n + 1, s->landed = ticket, *done = true;
    return 0;
}

static int sd_copy_sync(hr_dev *d, hr_err *e) {
    standin *s = S(d);
    bool done = true;
    if (!s->n_copies) return 0;
    const int32_t lag = s->copy_lag;
    s->copy_lag = 0; /* the next query lands everything up to the newest copy */
    const int rc = sd_copy_done(d, s->copies[s->n_copies - 1].ticket, &done, e);
    s->copy_lag = lag;
    return rc;
}

void hr_dev_standin_set_copy_lag(hr_dev *d, int32_t lag) { S(d)->copy_lag = lag > 0 ? lag : 0; }

static void sd_free(hr_dev *d) {
    standin *s = S(d);
    free(s->copies);
    hr_cpu_free(&s->cpu);
    hr_sparse_ws_free(&s->ws);
    free(s->arena), free(s->scores), free(s->qprep);
    free(s);
    free(d);
}

static const hr_dev_ops standin_ops = {
    .name = "standin", .mem_info = sd_mem_info, .overhead = sd_overhead, .reserve = sd_reserve,
    .host_alloc = sd_host_alloc, .host_free = sd_host_free, .to_dev = sd_to_dev, .to_host = sd_to_host,
    .matmul = sd_matmul, .gather_matmul = sd_gather, .sparse_axpy = sd_axpy, .rmsnorm = sd_rmsnorm,
    .rope = sd_rope, .attention = hr_standin_attention, .ffn_act = sd_ffn_act, .swiglu_oai = sd_swiglu_oai, .apply_mask = sd_apply_mask,
    .add = sd_add, .add_bias = sd_add_bias, .sync = sd_sync, .free = sd_free,
    .copy_async = sd_copy_async, .copy_done = sd_copy_done, .copy_sync = sd_copy_sync,
    .thr_mask = hr_standin_thr_mask, .gather_matmul_masked = hr_standin_gather_masked,
    .copies_inline = true,
};

hr_dev *hr_dev_standin_open(uint64_t capacity, int n_threads, hr_err *e) {
    if (n_threads < 1 || n_threads > 512) return hr_errf(e, "standin: %d threads", n_threads), NULL;
    hr_dev *d = calloc(1, sizeof *d);
    standin *s = calloc(1, sizeof *s);
    if (!d || !s) {
        free(d), free(s);
        return hr_errf(e, "out of memory"), NULL;
    }
    s->capacity = capacity;
    hr_sparse_ws_init(&s->ws);
    if (hr_cpu_init(&s->cpu, n_threads, e)) {
        free(d), free(s);
        return NULL;
    }
    d->ops = &standin_ops, d->impl = s;
    return d;
}

int hr_standin_attn_scratch(hr_dev *d, int32_t n_ctx, int32_t head_dim, float **scores, uint8_t **qprep, size_t *stride,
                            hr_cpu **cpu, hr_err *e) {
    standin *s = S(d);
    const size_t nt = (size_t)hr_pool_threads(s->cpu.pool), need = nt * (size_t)n_ctx;
    const size_t qs = (hr_act_bytes(HR_F16, head_dim) + 63) & ~(size_t)63;
    if (need > s->scores_n || qs > s->qprep_stride) {
        free(s->scores), free(s->qprep);
        s->scores = malloc(need * sizeof(float));
        s->qprep = malloc(nt * qs);
        s->scores_n = s->scores && s->qprep ? need : 0;
        s->qprep_stride = s->scores && s->qprep ? qs : 0;
        if (!s->scores_n) return hr_errf(e, "standin: out of memory for attention scratch");
    }
    *scores = s->scores, *qprep = s->qprep, *stride = s->qprep_stride, *cpu = &s->cpu;
    return 0;
}

void *hr_standin_span(hr_dev *d, uint64_t off, uint64_t n, const char *what, hr_err *e) { return span(d, off, n, what, e); }
