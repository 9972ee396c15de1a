/* The mixture-of-experts FFN (moe.h): routing, grouping the batch by expert, one product
 * per used expert, weighted sum in rank order. Numerics follow llama.cpp's build_moe_ffn:
 * softmax with a double sum then one float scale, top-k by probability, the weights' sum
 * (double, clamped below at F16's smallest normal) dividing each weight, each expert output
 * times its weight, then added rank by rank. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "moe.h"

/* Weights renormalised to sum 1 never divide by less than this (llama.cpp's clamp). */
#define HR_MOE_MIN_WSUM 6.103515625e-5f

struct hr_moe_ws {
    int32_t k, ne, ff, d;
    float *logits;         /* [n_batch][n_expert] router scores, then probabilities */
    int32_t *sel;          /* [n_batch][k] chosen experts, rank order */
    float *w;              /* [n_batch][k] their weights */
    int32_t *count, *start; /* [n_expert] tokens routed to each expert; offsets into slot */
    int32_t *slot;         /* [n_batch * k] t * k + rank, grouped by expert (token order within) */
    float *xg, *g, *u, *a, *y; /* one expert's group: inputs [n][d], gate/up/act [n][ff], outputs [n][d] */
    float *ys;             /* [n_batch][k][d] weighted expert outputs */
    bool routed;           /* logits hold this layer's scores already (hr_moe_route_early) */
    uint64_t expert_bytes; /* one expert's three matrices */
    hearth_moe_stats st;
};

int hr_moe_ctx_init(hearth_ctx *c, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    if (!hp->n_expert) return 0;
    struct hr_moe_ws *w = calloc(1, sizeof *w);
    if (!w) return hr_errf(e, "out of memory");
    c->moe = w;
    const size_t nb = (size_t)c->n_batch, k = (size_t)hp->n_expert_used, ne = (size_t)hp->n_expert;
    const size_t d = (size_t)hp->n_embd, ff = (size_t)hp->n_ff_exp;
    w->k = (int32_t)k, w->ne = (int32_t)ne, w->ff = (int32_t)ff, w->d = (int32_t)d;
    const size_t bytes[] = {nb * ne * 4, nb * k * 4, nb * k * 4, ne * 4, ne * 4, nb * k * 4,
                            nb * d * 4, nb * ff * 4, nb * ff * 4, nb * ff * 4, nb * d * 4, nb * k * d * 4};
    void **bufs[] = {(void **)&w->logits, (void **)&w->sel, (void **)&w->w, (void **)&w->count, (void **)&w->start,
                     (void **)&w->slot, (void **)&w->xg, (void **)&w->g, (void **)&w->u, (void **)&w->a,
                     (void **)&w->y, (void **)&w->ys};
    for (size_t i = 0; i < sizeof bytes / sizeof *bytes; i++) {
        if (!(*bufs[i] = calloc(1, bytes[i]))) return hr_errf(e, "out of memory allocating expert buffers");
        c->scratch_bytes += bytes[i];
    }
    w->expert_bytes = hr_moe_expert_bytes(&c->m->layers[0].moe);
    w->st = (hearth_moe_stats){.n_expert = hp->n_expert, .n_expert_used = hp->n_expert_used, .n_layer = hp->n_layer,
                               .expert_bytes = w->expert_bytes * ne * (uint64_t)hp->n_layer};
    return 0;
}

void hr_moe_ctx_free(hearth_ctx *c) {
    struct hr_moe_ws *w = c->moe;
    if (!w) return;
    free(w->logits), free(w->sel), free(w->w), free(w->count), free(w->start), free(w->slot);
    free(w->xg), free(w->g), free(w->u), free(w->a), free(w->y), free(w->ys);
    free(w);
    c->moe = NULL;
}

int hr_moe_route_early(hearth_ctx *c, const hr_layer *L, const float *x, int32_t n, hr_err *e) {
    if (!L->moe.router.data || !c->m->hp.arch->moe_router_input) return 0;
    if (hr_matmul(&c->cpu, &L->moe.router, x, n, c->moe->logits, e)) return -1;
    c->moe->routed = true;
    return 0;
}

/* Probabilities of one token's scores p[ne], in place. */
static void gate_probs(hr_moe_gate g, float *p, int32_t ne) {
    if (g == HR_MOE_SIGMOID) {
        for (int32_t i = 0; i < ne; i++) p[i] = 1.0f / (1.0f + expf(-p[i]));
        return;
    }
    float max = -INFINITY;
    for (int32_t i = 0; i < ne; i++) max = p[i] > max ? p[i] : max;
    double sum = 0;
    for (int32_t i = 0; i < ne; i++) sum += (double)(p[i] = expf(p[i] - max));
    const float s = (float)(1.0 / sum);
    for (int32_t i = 0; i < ne; i++) p[i] *= s;
}

/* Token t's top-k experts (ties and NaN: the lower id) and their weights. */
static void choose(const hearth_ctx *c, struct hr_moe_ws *w, int32_t t) {
    const float *p = w->logits + (int64_t)t * w->ne;
    int32_t *sel = w->sel + (int64_t)t * w->k;
    float *wt = w->w + (int64_t)t * w->k;
    for (int32_t r = 0; r < w->k; r++) {
        int32_t best = -1;
        for (int32_t i = 0; i < w->ne; i++) {
            bool taken = false;
            for (int32_t q = 0; q < r && !taken; q++) taken = sel[q] == i;
            if (!taken && (best < 0 || p[i] > p[best])) best = i;
        }
        sel[r] = best, wt[r] = p[best];
    }
    if (!c->m->hp.arch->moe_norm) return;
    double sum = 0;
    for (int32_t r = 0; r < w->k; r++) sum += (double)wt[r];
    float s = (float)sum;
    if (!(s >= HR_MOE_MIN_WSUM)) s = s != s ? s : HR_MOE_MIN_WSUM; /* NaN stays NaN */
    for (int32_t r = 0; r < w->k; r++) wt[r] /= s;
}

/* Scores (unless routed early), probabilities, choices; then the tokens grouped by expert. */
static int route(hearth_ctx *c, const hr_layer *L, const float *xn, int32_t n, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    if (!w->routed && hr_matmul(&c->cpu, &L->moe.router, xn, n, w->logits, e)) return -1;
    w->routed = false;
    memset(w->count, 0, sizeof(int32_t) * (size_t)w->ne);
    for (int32_t t = 0; t < n; t++) {
        gate_probs(c->m->hp.moe_gate, w->logits + (int64_t)t * w->ne, w->ne);
        choose(c, w, t);
        for (int32_t r = 0; r < w->k; r++) w->count[w->sel[t * w->k + r]]++;
    }
    for (int32_t x = 0, off = 0; x < w->ne; x++) w->start[x] = off, off += w->count[x];
    for (int32_t t = 0; t < n; t++)
        for (int32_t r = 0; r < w->k; r++) w->slot[w->start[w->sel[t * w->k + r]]++] = t * w->k + r;
    for (int32_t x = 0; x < w->ne; x++) w->start[x] -= w->count[x];
    return 0;
}

/* Expert x over its cnt tokens: gather their inputs, gate/up, activation, down, each output
 * row times its weight into ys. */
static int run_expert(hearth_ctx *c, const hr_moe_weights *mw, int32_t x, const float *xn, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const int32_t cnt = w->count[x], *slot = w->slot + w->start[x];
    const size_t d = (size_t)w->d;
    for (int32_t i = 0; i < cnt; i++) memcpy(w->xg + i * d, xn + (size_t)(slot[i] / w->k) * d, d * sizeof(float));
    const hr_mat gate = hr_moe_expert(&mw->gate, x), up = hr_moe_expert(&mw->up, x), down = hr_moe_expert(&mw->down, x);
    if (hr_matmul(&c->cpu, &gate, w->xg, cnt, w->g, e) || hr_matmul(&c->cpu, &up, w->xg, cnt, w->u, e)) return -1;
    hr_ffn_act(w->a, w->g, w->u, (int64_t)cnt * w->ff, c->m->hp.act);
    if (hr_matmul(&c->cpu, &down, w->a, cnt, w->y, e)) return -1;
    for (int32_t i = 0; i < cnt; i++) {
        const float wt = w->w[slot[i]], *y = w->y + i * d;
        float *dst = w->ys + (size_t)slot[i] * d;
        for (size_t j = 0; j < d; j++) dst[j] = y[j] * wt;
    }
    return 0;
}

static void count_reads(hearth_ctx *c, int il, int32_t n, int32_t used) {
    hearth_moe_stats *s = &c->moe->st;
    const uint64_t bytes = (uint64_t)used * c->moe->expert_bytes;
    if (il == 0) s->tokens += (uint64_t)n, s->decode_tokens += n == 1;
    s->read_bytes += bytes;
    if (n == 1) s->decode_read_bytes += bytes;
}

int hr_moe_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *xn, int32_t n, float *out, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    if (route(c, L, xn, n, e)) return -1;
    int32_t used = 0;
    for (int32_t x = 0; x < w->ne; x++) {
        if (!w->count[x]) continue;
        used++;
        if (run_expert(c, &L->moe, x, xn, e)) return -1;
    }
    const size_t d = (size_t)w->d;
    for (int32_t t = 0; t < n; t++) { /* rank order, as llama.cpp adds the expert views */
        const float *ys = w->ys + (size_t)t * (size_t)w->k * d;
        float *o = out + (size_t)t * d;
        memcpy(o, ys, d * sizeof(float));
        for (int32_t r = 1; r < w->k; r++)
            for (size_t j = 0; j < d; j++) o[j] += ys[(size_t)r * d + j];
    }
    count_reads(c, il, n, used);
    return 0;
}

const int32_t *hr_moe_last_experts(const hearth_ctx *c) { return c->moe ? c->moe->sel : NULL; }
const float *hr_moe_last_weights(const hearth_ctx *c) { return c->moe ? c->moe->w : NULL; }

int hearth_ctx_moe_stats(const hearth_ctx *c, hearth_moe_stats *out) {
    if (!c->moe) return -1;
    *out = c->moe->st;
    return 0;
}
