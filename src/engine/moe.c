/* The mixture-of-experts FFN (moe.h): routing, grouping the batch by expert, one product
 * per used expert, weighted sum in rank order. Numerics follow llama.cpp's build_moe_ffn:
 * softmax with a double sum then one float scale, top-k by probability, the weights' sum
 * (double, clamped below at F16's smallest normal) dividing each weight, each expert output
 * times its weight, then added rank by rank. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_oai.h"
#include "backends/cpu/prof.h"
#include "backends/cpu/sparse.h"
#include "hybrid.h"
#include "moe.h"
#include "sparse/routing_trace.h"

/* Exact mode: above this share of an expert's neurons in its group's union, the full up
 * product beats gathered rows (hr_gather_matmul equals hr_matmul row for row, so the choice
 * never changes a result). */
#define HR_MOE_UNION_DENSE_SHARE 0.6

/* Weights renormalised to sum 1 never divide by less than this (llama.cpp's clamp). */
#define HR_MOE_MIN_WSUM 6.103515625e-5f

/* One expert group's rows of the per-group buffers (struct hr_moe_ws): all of them for an
 * expert run alone (base_buf), or its share of a wave's (wave_buf), so that the steps of a
 * wave's experts can run side by side, each step's products in one pool run. */
typedef struct moe_buf {
    float *xg, *g, *u, *a, *gc, *y; /* inputs [cnt][d]; gate, up, act [cnt][ff] (u, gc: [cnt][nu]); outputs [cnt][d] */
    float *ps;                      /* predicted mode: scores [cnt][ff] */
    int32_t *idx;                   /* [ff] the group's union of neurons */
} moe_buf;

/* One expert of a wave (run_waves, sparse_waves): its matrices, its rows in the wave's buffers,
 * and the epilogues that finish them inside the products' pool runs. */
typedef struct moe_item {
    const hearth_ctx *c;
    hr_mat gate, up, down;
    const float *gb, *ub, *db; /* the expert's biases, or NULL */
    float *g, *u, *a;          /* [cnt][ff] */
    float *y;                  /* [cnt][d] */
    const int32_t *slot;       /* its cnt (token, rank) slots */
    int32_t x, cnt;            /* the expert, its tokens */
    bool pred;                 /* sparse_waves: an expert with a predictor, whose fc1 and fc2
                                  gate and up hold, its hidden units g and its scores u */
    hr_mm_epi act, scatter;
    /* sparse_experts' state: */
    moe_buf b;                 /* its rows of the buffers */
    const int32_t *uidx;       /* the neurons up and down are computed for: b.idx, or all */
    int64_t nu;                /* their count (predicted mode's gate step: its union's) */
    int64_t gate_rows, down_rows; /* rows read */
    uint64_t pc[3], gate_on;   /* predicted mode's counts (count_expert); exact mode's firing pairs */
    bool full;                 /* predicted mode: the gate's full product */
} moe_item;

struct hr_moe_ws {
    int32_t k, ne, ff, d;
    moe_item *items;       /* [n_expert] a wave's experts */
    hr_mm_item *mm;        /* [n_expert] their products */
    hr_sparse_item *gi;    /* [n_expert] their gathered products */
    hr_sparse_item *ai;    /* [n_expert] their sparse axpys */
    float *logits;         /* [n_batch][n_expert] router scores, then probabilities */
    int32_t *sel;          /* [n_batch][k] chosen experts, rank order */
    float *w;              /* [n_batch][k] their weights */
    int32_t *count, *start; /* [n_expert] tokens routed to each expert; offsets into slot */
    int32_t *slot;         /* [n_batch * k] t * k + rank, grouped by expert (token order within) */
    float *xg, *g, *u, *a, *y; /* one expert's group: inputs [n][d], gate/up/act [n][ff], outputs [n][d] */
    float *ys;             /* [n_batch][k][d] weighted expert outputs */
    float *gc;             /* exact mode: [n][nu] gate values of the group's union */
    int32_t *idx, *all;    /* exact mode: [min(n_expert, n)][ff] each wave expert's union of firing neurons; 0..ff-1 */
    uint64_t *routed_n;    /* [n_layer][n_expert] tokens routed to each expert */
    uint32_t *fire_n;      /* NULL, or (hr_moe_count_neurons) [n_layer][n_expert][ff] tokens each neuron fired on */
    bool routed;           /* logits hold this layer's scores already (hr_moe_route_early) */
    uint64_t expert_bytes; /* one expert's three matrices */
    int32_t *dr0, *dn;     /* [n_expert] split MoE: first row and rows of each device expert in h_xe */
    int32_t *xr0, *xn;     /* [n_expert] the same for the layer's host experts with hot neurons (xhot) */
    FILE *trace;           /* hearth_ctx_dump_routing: the routing trace being written, or NULL */
    float *ph, *ps;        /* predicted mode: [n][max rank] predictor hidden units, [n][ff] scores */
    int64_t max_rank;      /* largest expert predictor rank (0: none) */
    uint64_t *pred_n;      /* NULL, or (predictors and ffn_stats) [n_layer][n_expert][3]: neurons
                              predicted, fired (full gate > 0), both */
    uint8_t *xpm;          /* predicted split MoE: [n_batch * k][ff] each split expert row's marks (row as in h_xe) */
    uint8_t *xmasked;      /* [n_expert] per xhot index: its predictor ran (predict_split) */
    hr_moe_observer obs;   /* calibration: each dense expert group's inputs and activations */
    void *obs_ud;
    hearth_moe_stats st;
    float *raw;            /* [n_expert] one token's router scores before its probabilities */
    float margin;          /* smallest router margin since hearth_ctx_moe_margin last took it */
};

bool hr_moe_has_predictors(const hearth_model *m) {
    for (int il = 0; m->hp.n_expert && il < m->hp.n_layer; il++)
        if (m->layers[il].moe.n_pred) return true;
    return false;
}

/* Largest predictor rank over the model's experts (0: none). */
static int64_t max_pred_rank(const hearth_model *m) {
    int64_t r = 0;
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int32_t x = 0; m->layers[il].moe.pred && x < m->hp.n_expert; x++)
            if (m->layers[il].moe.pred[x].n_out > r) r = m->layers[il].moe.pred[x].n_out;
    return r;
}

/* Predicted mode's buffers, where the model has expert predictors. */
static int pred_ws_init(hearth_ctx *c, struct hr_moe_ws *w, hr_err *e) {
    if (!(w->max_rank = max_pred_rank(c->m))) return 0;
    const size_t nb = (size_t)c->n_batch, nl = (size_t)c->m->hp.n_layer;
    const size_t b1 = nb * (size_t)w->max_rank * 4, b2 = nb * (size_t)w->ff * 4, b3 = c->ffn.stats_on ? nl * (size_t)w->ne * 3 * 8 : 0;
    const size_t b4 = nb * (size_t)w->k * (size_t)w->ff;
    if (!(w->ph = malloc(b1)) || !(w->ps = malloc(b2)) || (b3 && !(w->pred_n = calloc(1, b3))) || !(w->xpm = malloc(b4)) ||
        !(w->xmasked = calloc((size_t)w->ne, 1)))
        return hr_errf(e, "out of memory allocating expert predictor buffers");
    c->scratch_bytes += b1 + b2 + b3 + b4 + (size_t)w->ne;
    return 0;
}

int hr_moe_ctx_init(hearth_ctx *c, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    if (!hp->n_expert) return 0;
    struct hr_moe_ws *w = calloc(1, sizeof *w);
    if (!w) return hr_errf(e, "out of memory");
    c->moe = w;
    w->margin = INFINITY;
    const size_t nb = (size_t)c->n_batch, k = (size_t)hp->n_expert_used, ne = (size_t)hp->n_expert;
    const size_t d = (size_t)hp->n_embd, ff = (size_t)hp->n_ff_exp;
    w->k = (int32_t)k, w->ne = (int32_t)ne, w->ff = (int32_t)ff, w->d = (int32_t)d;
    const size_t nl = (size_t)hp->n_layer;
    const size_t nw = nb < ne ? nb : ne; /* a wave's experts at most */
    const size_t bytes[] = {nb * ne * 4, nb * k * 4, nb * k * 4, ne * 4,      ne * 4,      nb * k * 4, nb * d * 4,
                            nb * ff * 4, nb * ff * 4, nb * ff * 4, nb * d * 4, nb * k * d * 4, nb * ff * 4, nw * ff * 4,
                            ff * 4,      nl * ne * 8, ne * 4,      ne * 4,     ne * 4,      ne * 4,      ne * 4};
    void **bufs[] = {(void **)&w->logits, (void **)&w->sel, (void **)&w->w, (void **)&w->count, (void **)&w->start,
                     (void **)&w->slot, (void **)&w->xg, (void **)&w->g, (void **)&w->u, (void **)&w->a,
                     (void **)&w->y, (void **)&w->ys, (void **)&w->gc, (void **)&w->idx, (void **)&w->all,
                     (void **)&w->routed_n, (void **)&w->dr0, (void **)&w->dn, (void **)&w->xr0, (void **)&w->xn, (void **)&w->raw};
    for (size_t i = 0; i < sizeof bytes / sizeof *bytes; i++) {
        if (!(*bufs[i] = calloc(1, bytes[i]))) return hr_errf(e, "out of memory allocating expert buffers");
        c->scratch_bytes += bytes[i];
    }
    for (size_t j = 0; j < ff; j++) w->all[j] = (int32_t)j;
    if (!(w->items = calloc(ne, sizeof *w->items)) || !(w->mm = calloc(ne, sizeof *w->mm)) ||
        !(w->gi = calloc(ne, sizeof *w->gi)) || !(w->ai = calloc(ne, sizeof *w->ai)))
        return hr_errf(e, "out of memory allocating expert buffers");
    w->expert_bytes = hr_moe_expert_bytes(&c->m->layers[0].moe);
    uint64_t router = 0;
    for (int il = 0; il < hp->n_layer; il++) {
        const hr_mat *r = &c->m->layers[il].moe.router;
        router += (uint64_t)r->row_bytes * (uint64_t)r->n_out;
    }
    w->st = (hearth_moe_stats){.n_expert = hp->n_expert, .n_expert_used = hp->n_expert_used, .n_layer = hp->n_layer,
                               .expert_bytes = w->expert_bytes * ne * (uint64_t)hp->n_layer, .n_ff_exp = hp->n_ff_exp,
                               .router_bytes = router};
    return pred_ws_init(c, w, e);
}

void hr_moe_ctx_free(hearth_ctx *c) {
    struct hr_moe_ws *w = c->moe;
    if (!w) return;
    free(w->logits), free(w->sel), free(w->w), free(w->count), free(w->start), free(w->slot);
    free(w->xg), free(w->g), free(w->u), free(w->a), free(w->y), free(w->ys);
    free(w->gc), free(w->idx), free(w->all), free(w->routed_n), free(w->fire_n), free(w->dr0), free(w->dn);
    free(w->xr0), free(w->xn), free(w->raw), free(w->items), free(w->mm), free(w->gi), free(w->ai);
    free(w->ph), free(w->ps), free(w->pred_n), free(w->xpm), free(w->xmasked);
    if (w->trace) fclose(w->trace);
    free(w);
    c->moe = NULL;
}

int hr_moe_route_early(hearth_ctx *c, const hr_layer *L, const float *x, int32_t n, hr_err *e) {
    if (!L->moe.router.data || !c->m->hp.arch->moe_router_input) return 0;
    if (hr_matmul(&c->cpu, &L->moe.router, x, n, c->moe->logits, e)) return -1;
    c->moe->routed = true;
    return 0;
}

/* x[t][0..len) += b for each of n rows (b NULL: nothing), in ggml's order: product, then bias. */
static void add_rows(float *x, const float *b, int32_t n, int32_t len) {
    if (!b) return;
    for (int32_t t = 0; t < n; t++)
        for (int32_t j = 0; j < len; j++) x[(size_t)t * (size_t)len + (size_t)j] += b[j];
}

/* The experts' activation: the entry's, or OpenAI's clamped SwiGLU (gpt-oss). */
static void expert_act(const hearth_ctx *c, float *a, const float *g, const float *u, int64_t n) {
    const hr_arch *ar = c->m->hp.arch;
    if (ar->moe_act_limit > 0) hr_swiglu_oai(a, g, u, n, ar->moe_act_alpha, ar->moe_act_limit);
    else hr_ffn_act(a, g, u, n, c->m->hp.act);
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

/* Token t's router margin: its raw scores' (raw[ne], before the gate's probabilities) gap
 * between the last expert chosen and the best one left out. Where it is within rounding, a
 * rounding-sized change in the layer's input can swap them (ties in probability, as a
 * saturated sigmoid gives, make it zero or negative). */
static void note_margin(struct hr_moe_ws *w, const float *raw, const int32_t *sel) {
    float in = INFINITY, out = -INFINITY;
    for (int32_t i = 0; i < w->ne; i++) {
        bool taken = false;
        for (int32_t q = 0; q < w->k && !taken; q++) taken = sel[q] == i;
        if (taken && raw[i] < in) in = raw[i];
        if (!taken && raw[i] > out) out = raw[i];
    }
    if (out == -INFINITY) return; /* every expert chosen: nothing can swap */
    const float m = in - out;
    if (m < w->margin) w->margin = m;
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
    /* gpt-oss: the chosen raw scores become the weights through a softmax of their own */
    if (c->m->hp.moe_gate == HR_MOE_SOFTMAX_WEIGHT) gate_probs(HR_MOE_SOFTMAX, wt, w->k);
    if (!c->m->hp.arch->moe_norm) return;
    double sum = 0;
    for (int32_t r = 0; r < w->k; r++) sum += (double)wt[r];
    float s = (float)sum;
    if (!(s >= HR_MOE_MIN_WSUM)) s = s != s ? s : HR_MOE_MIN_WSUM; /* NaN stays NaN */
    for (int32_t r = 0; r < w->k; r++) wt[r] /= s;
}

/* Scores (unless routed early), probabilities, choices; then the tokens grouped by expert. */
static int route_run(hearth_ctx *c, const hr_layer *L, const float *xn, int32_t n, hr_err *e);

/* The routing, timed as one operation when profiling (prof.h); the router product inside
 * is charged to it rather than to matvec. */
static int route(hearth_ctx *c, const hr_layer *L, const float *xn, int32_t n, hr_err *e) {
    hr_prof *p = c->cpu.prof;
    if (!p) return route_run(c, L, xn, n, e);
    const hr_prof_mark pm = hr_prof_begin(p);
    p->scope = HR_PROF_MOE_ROUTE;
    const int r = route_run(c, L, xn, n, e);
    p->scope = -1;
    hr_prof_end(p, pm, HR_PROF_MOE_ROUTE, 0, 0);
    return r;
}

static int route_run(hearth_ctx *c, const hr_layer *L, const float *xn, int32_t n, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    if (!w->routed && hr_matmul(&c->cpu, &L->moe.router, xn, n, w->logits, e)) return -1;
    w->routed = false;
    memset(w->count, 0, sizeof(int32_t) * (size_t)w->ne);
    add_rows(w->logits, L->moe.router_b, n, w->ne);
    for (int32_t t = 0; t < n; t++) {
        /* SOFTMAX_WEIGHT ranks the raw scores; choose() turns the chosen ones into weights */
        float *p = w->logits + (int64_t)t * w->ne;
        memcpy(w->raw, p, sizeof(float) * (size_t)w->ne);
        if (c->m->hp.moe_gate != HR_MOE_SOFTMAX_WEIGHT) gate_probs(c->m->hp.moe_gate, p, w->ne);
        choose(c, w, t);
        note_margin(w, w->raw, w->sel + (int64_t)t * w->k);
        for (int32_t r = 0; r < w->k; r++) w->count[w->sel[t * w->k + r]]++;
    }
    for (int32_t x = 0, off = 0; x < w->ne; x++) w->start[x] = off, off += w->count[x];
    for (int32_t t = 0; t < n; t++)
        for (int32_t r = 0; r < w->k; r++) w->slot[w->start[w->sel[t * w->k + r]]++] = t * w->k + r;
    for (int32_t x = 0; x < w->ne; x++) w->start[x] -= w->count[x];
    return 0;
}

static moe_buf base_buf(struct hr_moe_ws *w) {
    return (moe_buf){.xg = w->xg, .g = w->g, .u = w->u, .a = w->a, .gc = w->gc, .y = w->y, .ps = w->ps, .idx = w->idx};
}

/* The rows from row r of each buffer for the wave's q-th expert, and its own index list. */
static moe_buf wave_buf(struct hr_moe_ws *w, size_t r, int q) {
    const size_t ff = (size_t)w->ff, d = (size_t)w->d;
    return (moe_buf){.xg = w->xg + r * d, .g = w->g + r * ff, .u = w->u + r * ff, .a = w->a + r * ff, .gc = w->gc + r * ff,
                     .y = w->y + r * d, .ps = w->ps ? w->ps + r * ff : NULL, .idx = w->idx + (size_t)q * ff};
}

/* Union over the group's cnt tokens of the neurons whose gate fires (b->g [cnt][ff]) into
 * b->idx; returns its size. *gate_on: the (token, neuron) pairs that fire, which is what
 * exact mode computes (count_expert). The rows are read in order, idx holding the marks
 * first and then, in place, the union. */
static int64_t gate_union(const struct hr_moe_ws *w, const moe_buf *b, int32_t cnt, uint64_t *gate_on) {
    const size_t ff = (size_t)w->ff;
    memset(b->idx, 0, sizeof(int32_t) * ff);
    uint64_t on = 0;
    for (size_t i = 0; i < (size_t)cnt; i++) {
        const float *g = b->g + i * ff;
        for (size_t j = 0; j < ff; j++) {
            const bool f = g[j] > 0;
            b->idx[j] |= f, on += f;
        }
    }
    int64_t nu = 0;
    for (int32_t j = 0; j < w->ff; j++)
        if (b->idx[j]) b->idx[nu++] = j;
    *gate_on = on;
    return nu;
}

/* Exact mode (ReGLU/dReLU experts): relu(gate) is zero unless gate > 0, so up is computed only
 * for the union of firing neurons and every other activation is zero. Its first step: the
 * union (every neuron past HR_MOE_UNION_DENSE_SHARE of them, where the full up product beats
 * gathered rows; hr_gather_matmul equals hr_matmul row for row, so the choice never changes a
 * result), whose up rows the caller gathers into b.u. With scatter (no ffn_down_exps_t),
 * the activations go back into full rows of b.a, zeros elsewhere, for the dense down
 * product, which then sees the values dense mode gives it (relu(g) * u is a zero there too). */
static void exact_union(const hearth_ctx *c, moe_item *it, bool scatter) {
    struct hr_moe_ws *w = c->moe;
    const size_t ff = (size_t)w->ff;
    it->nu = gate_union(w, &it->b, it->cnt, &it->gate_on);
    it->uidx = it->b.idx;
    if (it->nu > HR_MOE_UNION_DENSE_SHARE * (double)ff) it->uidx = w->all, it->nu = (int64_t)ff;
    if (scatter) memset(it->b.a, 0, sizeof(float) * (size_t)it->cnt * ff);
}

/* Its second, after up: act(gate, up) over the union into b.gc [cnt][nu], and with scatter
 * into b.a's full rows. */
static void exact_act(const hearth_ctx *c, const moe_item *it, bool scatter) {
    const size_t ff = (size_t)c->moe->ff, nu = (size_t)it->nu;
    const moe_buf *b = &it->b;
    for (size_t i = 0; i < (size_t)it->cnt; i++)
        for (size_t q = 0; q < nu; q++) b->gc[i * nu + q] = b->g[i * ff + (size_t)it->uidx[q]];
    hr_ffn_act(b->gc, b->gc, b->u, (int64_t)it->cnt * it->nu, c->m->hp.act); /* element-wise: in place is fine */
    for (size_t i = 0; scatter && i < (size_t)it->cnt; i++)
        for (size_t q = 0; q < nu; q++) {
            const size_t at = i * ff + (size_t)it->uidx[q];
            if (b->g[at] > 0) b->a[at] = b->gc[i * nu + q];
        }
}

/* Exact mode's up and activation for one expert group over the base buffers, its products on
 * their own (run_cold_expert); *rows: up rows read, *gate_on: firing pairs. */
static int expert_exact(hearth_ctx *c, const hr_mat *up, int32_t cnt, bool scatter, int64_t *rows, uint64_t *gate_on,
                        hr_err *e) {
    moe_item it = {.b = base_buf(c->moe), .cnt = cnt};
    exact_union(c, &it, scatter);
    *rows = it.nu, *gate_on = it.gate_on;
    if (it.nu && hr_gather_matmul(&c->cpu, up, it.b.xg, cnt, it.uidx, it.nu, it.b.u, e)) return -1;
    exact_act(c, &it, scatter);
    return 0;
}

/* Ends the predictor's profile scope (prof.h); returns r. */
static int pred_done(hearth_ctx *c, hr_prof_mark pm, int r) {
    if (!c->cpu.prof) return r;
    c->cpu.prof->scope = -1;
    hr_prof_end(c->cpu.prof, pm, HR_PROF_PREDICTOR, 0, 0);
    return r;
}

/* Expert x's predictor over its group: w->ps[cnt][ff] = fc2 . relu(fc1 . x); a neuron is
 * predicted iff its score >= the model's threshold (0 unless set). */
static int expert_scores(hearth_ctx *c, const hr_moe_weights *mw, int32_t x, int32_t cnt, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const hr_mat *f1 = &mw->pred[x], *f2 = &mw->pred[w->ne + x];
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    if (c->cpu.prof) c->cpu.prof->scope = HR_PROF_PREDICTOR; /* fc1/fc2 charged here, not to matvec */
    if (hr_matmul(&c->cpu, f1, w->xg, cnt, w->ph, e)) return pred_done(c, pm, -1);
    const int64_t nh = (int64_t)cnt * f1->n_out;
    for (int64_t i = 0; i < nh; i++) w->ph[i] = w->ph[i] > 0 ? w->ph[i] : 0.0f;
    return pred_done(c, pm, hr_matmul(&c->cpu, f2, w->ph, cnt, w->ps, e));
}

/* --stats in predicted mode: the group's neurons firing (the full gate in b.g, computed
 * for the count: gate > 0) and firing and predicted into pc[1], pc[2]; the expert's totals
 * of pc[0..2] (predicted, fired, both). */
static void count_pred(hearth_ctx *c, int il, moe_item *it, float thr) {
    struct hr_moe_ws *w = c->moe;
    uint64_t *pn = w->pred_n + ((size_t)il * (size_t)w->ne + (size_t)it->x) * 3, *pc = it->pc;
    const size_t n = (size_t)it->cnt * (size_t)w->ff;
    for (size_t i = 0; i < n; i++) {
        const bool f = it->b.g[i] > 0;
        pc[1] += f, pc[2] += f && it->b.ps[i] >= thr;
    }
    pn[0] += pc[0], pn[1] += pc[1], pn[2] += pc[2];
}

/* Predicted mode: the gate only for the union of the group's predicted neurons (gathered
 * rows into b.gc, equal row for row to the full product; past HR_MOE_UNION_DENSE_SHARE, or
 * with --stats, the full product into b.g: it->full), then (pred_mask) b.g holds each token's
 * gate value where its own predictor marked the neuron and 0 elsewhere, so the exact steps
 * that follow compute up and down only for predicted neurons whose gate fires, and a token's
 * result never depends on its batch. A predictor marking every neuron gives exact mode's
 * output bit for bit. First step: the union (scores in b.ps) into b.idx, it->nu its size,
 * pc[0] the token-neuron pairs predicted, gate_rows what the mode reads. */
static void pred_union(const hearth_ctx *c, moe_item *it) {
    const size_t ff = (size_t)c->moe->ff;
    const float thr = c->m->sparse_threshold;
    int64_t nu = 0;
    uint64_t np = 0;
    for (size_t j = 0; j < ff; j++) {
        bool any = false;
        for (int32_t i = 0; i < it->cnt; i++) {
            const bool p = it->b.ps[(size_t)i * ff + j] >= thr;
            any |= p, np += p;
        }
        if (any) it->b.idx[nu++] = (int32_t)j;
    }
    it->nu = nu, it->pc[0] = np, it->pc[1] = it->pc[2] = 0;
    const bool dense = nu > HR_MOE_UNION_DENSE_SHARE * (double)ff;
    it->full = dense || c->ffn.stats_on;
    it->gate_rows = dense ? (int64_t)ff : nu; /* --stats' full product is for the counts: bytes stay what the mode reads */
}

/* Second step, after the gate's product: b.g masked by the predictions. */
static void pred_mask(hearth_ctx *c, int il, moe_item *it) {
    const size_t ff = (size_t)c->moe->ff, n = (size_t)it->cnt * ff, nu = (size_t)it->nu;
    const float thr = c->m->sparse_threshold;
    const moe_buf *b = &it->b;
    if (it->full) {
        if (c->moe->pred_n) count_pred(c, il, it, thr);
        for (size_t i = 0; i < n; i++)
            if (!(b->ps[i] >= thr)) b->g[i] = 0.0f;
        return;
    }
    memset(b->g, 0, sizeof(float) * n);
    for (size_t i = 0; i < (size_t)it->cnt; i++)
        for (size_t q = 0; q < nu; q++) {
            const size_t at = i * ff + (size_t)b->idx[q];
            if (b->ps[at] >= thr) b->g[at] = b->gc[i * nu + q];
        }
}

/* FFN counters of one expert's group: neurons computed (exact: gate > 0) and, with --stats,
 * those that fire (gate > 0, and up > 0 for dReLU). b->g holds the full gate; up values are in
 * b->u, [cnt][ff] in dense mode or [cnt][nu] over b->idx (all when nu == ff) in exact mode,
 * where gate_on is gate_union's count. Predicted experts (pc: pred_union's and count_pred's
 * counts): computed counts the predicted neurons; fired and fired_computed the gate's firing
 * and the predicted among it. */
static void count_expert(hearth_ctx *c, int il, int32_t x, int32_t cnt, bool exact, int64_t nu, const uint64_t *pc,
                         uint64_t gate_on, const moe_buf *b) {
    struct hr_moe_ws *w = c->moe;
    hearth_ffn_stats *s = &c->ffn.stats[il];
    if (pc) {
        s->computed += pc[0];
        if (c->ffn.stats_on) s->fired += pc[1], s->fired_computed += pc[2];
        return;
    }
    const bool relu = hr_act_relu_family(c->m->hp.act), drelu = c->m->hp.act == HR_ACT_DRELU;
    const size_t ff = (size_t)w->ff;
    uint32_t *fn = w->fire_n && relu ? w->fire_n + ((size_t)il * (size_t)w->ne + (size_t)x) * ff : NULL;
    if (!exact) s->computed += (uint64_t)cnt * ff;
    if (exact && !c->ffn.stats_on && !fn) s->computed += gate_on; /* gate_union counted them */
    if (!relu || (!c->ffn.stats_on && !fn)) return;
    const int32_t *idx = exact && nu < (int64_t)ff ? b->idx : w->all;
    const int64_t n_up = exact ? nu : (int64_t)ff;
    uint64_t on_n = 0, fired = 0;
    for (int32_t i = 0; i < cnt; i++) {
        const float *g = b->g + (size_t)i * ff, *u = b->u + (size_t)i * (size_t)n_up;
        for (int64_t q = 0; q < n_up; q++) {
            const bool on = g[idx[q]] > 0, f = on && (!drelu || u[q] > 0);
            on_n += on, fired += f;
            if (fn && f) fn[idx[q]]++;
        }
    }
    if (exact) s->computed += on_n;
    if (c->ffn.stats_on) s->fired += fired, s->fired_computed += fired; /* both modes compute every firing neuron */
}

/* Row reads of the sparse axpy over [cnt][n_idx] coefficients A: it takes the tokens in
 * groups of 16 (sparse.h) and reads a row once per group where some coefficient is non-zero. */
static int64_t rows_needed(const float *A, int32_t cnt, int64_t n_idx) {
    int64_t rows = 0;
    for (int32_t t0 = 0; t0 < cnt; t0 += 16)
        for (int64_t q = 0; q < n_idx; q++) {
            bool any = false;
            for (int32_t i = t0; i < cnt && i < t0 + 16 && !any; i++) any = A[(size_t)i * (size_t)n_idx + (size_t)q] != 0.0f;
            rows += any;
        }
    return rows;
}

/* y = down . activations from ffn_down_exps_t rows: the sparse axpy skips zero activations,
 * and its sums do not depend on the zero-coefficient indices it is handed, so dense mode
 * (every neuron, a [cnt][ff]) and exact mode (the union, gc [cnt][nu]) give the same bits,
 * and each token the bits it gets alone. *rows: down_t rows read. */
static int down_sparse(hearth_ctx *c, const hr_mat *down_t, int32_t cnt, bool exact, int64_t nu, int64_t *rows, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const float *A = exact ? w->gc : w->a;
    const int32_t *idx = exact && nu < (int64_t)w->ff ? w->idx : w->all;
    const int64_t n_idx = exact ? nu : (int64_t)w->ff;
    *rows = n_idx ? rows_needed(A, cnt, n_idx) : 0;
    if (!n_idx) return memset(w->y, 0, sizeof(float) * (size_t)cnt * (size_t)w->d), 0;
    return hr_sparse_axpy_ws(&c->cpu, &c->sparse_ws, down_t, A, cnt, idx, n_idx, w->y, e);
}

/* Exact and predicted mode: up and down only for some neurons of each expert. */
static bool sparse_mode(const hearth_ctx *c) { return c->ffn.mode == HEARTH_FFN_EXACT || c->ffn.mode == HEARTH_FFN_PREDICTED; }

/* Expert output rows y times their routing weights into their rank slots of ys. */
static void weigh_into_ys(struct hr_moe_ws *w, const int32_t *slot, int32_t cnt, const float *y) {
    const size_t d = (size_t)w->d;
    for (int32_t i = 0; i < cnt; i++) {
        const float wt = w->w[slot[i]], *yi = y + (size_t)i * d;
        float *dst = w->ys + (size_t)slot[i] * d;
        for (size_t j = 0; j < d; j++) dst[j] = yi[j] * wt;
    }
}

/* A gathered product's item over an expert group's rows of X. */
static hr_sparse_item gather_of(const hr_mat *W, const moe_item *it, const int32_t *idx, int64_t n, float *Y) {
    return (hr_sparse_item){.W = W, .X = it->b.xg, .n_tok = it->cnt, .idx = idx, .n_idx = n, .Y = Y};
}

/* sparse_experts' work between its products, expert by expert: each item's step writes only
 * its own rows of the buffers, its own counters (pred_n of its expert) and its tokens' rank
 * slots of ys. */
typedef struct {
    hearth_ctx *c;
    const hr_moe_weights *mw;
    moe_item *items;
    int il, step;
    bool sparse_down;
} expert_steps;

enum { STEP_UNION, STEP_UP, STEP_DOWN, STEP_OUT };

static void expert_step(void *arg, int q, int n) {
    (void)n;
    const expert_steps *s = arg;
    hearth_ctx *c = s->c;
    struct hr_moe_ws *w = c->moe;
    moe_item *it = &s->items[q];
    switch (s->step) {
    case STEP_UNION: /* the predicted neurons' union */
        if (it->pred) pred_union(c, it);
        break;
    case STEP_UP: /* the gate masked and biased; the union of its firing neurons */
        if (it->pred) pred_mask(c, s->il, it);
        if (s->mw->gate_b) add_rows(it->b.g, s->mw->gate_b + (size_t)it->x * (size_t)w->ff, it->cnt, w->ff);
        exact_union(c, it, !s->sparse_down);
        break;
    case STEP_DOWN: /* the activations; the down rows they need */
        exact_act(c, it, !s->sparse_down);
        it->down_rows = !s->sparse_down ? it->down.n_out : it->nu ? rows_needed(it->b.gc, it->cnt, it->nu) : 0;
        if (s->sparse_down && !it->nu) memset(it->b.y, 0, sizeof(float) * (size_t)it->cnt * (size_t)w->d);
        break;
    default: /* STEP_OUT: the output's bias and routing weight */
        if (s->mw->down_b) add_rows(it->b.y, s->mw->down_b + (size_t)it->x * (size_t)w->d, it->cnt, w->d);
        weigh_into_ys(w, it->slot, it->cnt, it->b.y);
    }
}

/* Below this many (token, neuron) pairs in a wave, a step runs on the caller: a decoded
 * token's experts hold a few thousand, less than a hand-off costs; a prompt's hold hundreds of
 * thousands (on the caller: most of the 20% 'other' of a SmallThinker-shaped predicted prompt's
 * profile at 2 threads). */
#define HR_MOE_STEP_PAR 16384

static void run_step(expert_steps *s, int n, int step, int64_t pairs) {
    s->step = step;
    if (pairs >= HR_MOE_STEP_PAR && hr_pool_threads(s->c->cpu.pool) > 1) hr_pool_run_chunks(s->c->cpu.pool, expert_step, s, n);
    else
        for (int q = 0; q < n; q++) expert_step(s, q, n);
}

/* Exact and predicted mode for the n expert groups items (their inputs in b.xg; the gate in
 * b.g, or for an expert with a predictor (pred) its scores in b.ps): the predicted gates, then
 * up over each union of firing neurons, then down, each step's products of all n in one pool
 * run (hr_matmul_group, hr_gather_group, hr_sparse_axpy_group: every value the single
 * product's), each step's element-wise work between them (expert_step) on the pool where it is
 * long; outputs weighted into ys. */
static int sparse_experts(hearth_ctx *c, const hr_moe_weights *mw, int il, moe_item *items, int n, uint64_t *read, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const bool sparse_down = mw->down_t.data != NULL;
    expert_steps st = {.c = c, .mw = mw, .items = items, .il = il, .sparse_down = sparse_down};
    int nm = 0, ng = 0, na = 0;
    int64_t rows = 0;
    for (int q = 0; q < n; q++) {
        moe_item *it = &items[q];
        it->gate = hr_moe_expert(&mw->gate, it->x), it->up = hr_moe_expert(&mw->up, it->x);
        it->down = hr_moe_expert(sparse_down ? &mw->down_t : &mw->down, it->x);
        it->gate_rows = it->gate.n_out;
        rows += it->cnt;
    }
    const int64_t pairs = rows * w->ff;
    run_step(&st, n, STEP_UNION, pairs);
    for (int q = 0; q < n; q++) { /* the predicted experts' gates: full, or the union's rows */
        moe_item *it = &items[q];
        if (!it->pred) continue;
        if (it->full) w->mm[nm++] = (hr_mm_item){.W = &it->gate, .X = it->b.xg, .n_tok = it->cnt, .Y = it->b.g};
        else if (it->nu) w->gi[ng++] = gather_of(&it->gate, it, it->b.idx, it->nu, it->b.gc);
    }
    if (hr_matmul_group(&c->cpu, w->mm, nm, e) || hr_gather_group(&c->cpu, w->gi, ng, e)) return -1;
    run_step(&st, n, STEP_UP, pairs);
    ng = 0;
    for (int q = 0; q < n; q++) /* up over each union of firing neurons */
        if (items[q].nu) w->gi[ng++] = gather_of(&items[q].up, &items[q], items[q].uidx, items[q].nu, items[q].b.u);
    if (hr_gather_group(&c->cpu, w->gi, ng, e)) return -1;
    run_step(&st, n, STEP_DOWN, pairs);
    nm = 0;
    for (int q = 0; q < n; q++) { /* down: the axpy over the union's ffn_down_exps_t rows, or the full product */
        moe_item *it = &items[q];
        count_expert(c, il, it->x, it->cnt, true, it->nu, it->pred ? it->pc : NULL, it->gate_on, &it->b);
        if (!sparse_down) w->mm[nm++] = (hr_mm_item){.W = &it->down, .X = it->b.a, .n_tok = it->cnt, .Y = it->b.y};
        else if (it->nu)
            w->ai[na++] = (hr_sparse_item){.W = &it->down, .X = it->b.gc, .n_tok = it->cnt, .idx = it->uidx, .n_idx = it->nu,
                                           .Y = it->b.y};
    }
    if (hr_matmul_group(&c->cpu, w->mm, nm, e) || hr_sparse_axpy_group(&c->cpu, &c->sparse_ws, w->ai, na, e)) return -1;
    run_step(&st, n, STEP_OUT, rows * w->d);
    for (int q = 0; q < n; q++) {
        const moe_item *it = &items[q];
        if (it->pred)
            *read += (uint64_t)mw->pred[it->x].row_bytes * (uint64_t)mw->pred[it->x].n_out +
                     (uint64_t)mw->pred[w->ne + it->x].row_bytes * (uint64_t)mw->pred[w->ne + it->x].n_out;
        *read += (uint64_t)it->gate.row_bytes * (uint64_t)it->gate_rows + (uint64_t)it->up.row_bytes * (uint64_t)it->nu +
                 (uint64_t)it->down.row_bytes * (uint64_t)it->down_rows;
    }
    return 0;
}

/* Expert x over its cnt tokens: gather their inputs, gate/up, activation, down, each output
 * row times its weight into ys; adds the bytes of the expert's weights it read to *read.
 * In exact and predicted mode, sparse_experts' steps for this one expert. */
static int run_expert(hearth_ctx *c, const hr_moe_weights *mw, int il, int32_t x, const float *xn, uint64_t *read, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const int32_t cnt = w->count[x], *slot = w->slot + w->start[x];
    const size_t d = (size_t)w->d;
    for (int32_t i = 0; i < cnt; i++) memcpy(w->xg + i * d, xn + (size_t)(slot[i] / w->k) * d, d * sizeof(float));
    const hr_mat gate = hr_moe_expert(&mw->gate, x), up = hr_moe_expert(&mw->up, x), down = hr_moe_expert(&mw->down, x);
    if (sparse_mode(c)) {
        /* predicted mode: experts without a predictor (calibrate skipped them) run exact */
        const bool pred = c->ffn.mode == HEARTH_FFN_PREDICTED && mw->pred && mw->pred[x].data;
        if (pred ? expert_scores(c, mw, x, cnt, e) : hr_matmul(&c->cpu, &gate, w->xg, cnt, w->g, e)) return -1;
        moe_item it = {.c = c, .b = base_buf(w), .slot = slot, .x = x, .cnt = cnt, .pred = pred};
        return sparse_experts(c, mw, il, &it, 1, read, e);
    }
    const hr_mat down_t = hr_moe_expert(&mw->down_t, x);
    const bool sparse_down = mw->down_t.data != NULL;
    int64_t down_rows = 0;
    const size_t ffo = (size_t)x * (size_t)w->ff;
    if (hr_matmul(&c->cpu, &gate, w->xg, cnt, w->g, e)) return -1;
    if (mw->gate_b) add_rows(w->g, mw->gate_b + ffo, cnt, w->ff);
    if (hr_matmul(&c->cpu, &up, w->xg, cnt, w->u, e)) return -1;
    if (mw->up_b) add_rows(w->u, mw->up_b + ffo, cnt, w->ff);
    expert_act(c, w->a, w->g, w->u, (int64_t)cnt * w->ff);
    if (w->obs) w->obs(w->obs_ud, il, x, cnt, w->xg, w->a);
    const moe_buf b = base_buf(w);
    count_expert(c, il, x, cnt, false, up.n_out, NULL, 0, &b);
    if (sparse_down ? down_sparse(c, &down_t, cnt, false, up.n_out, &down_rows, e) : hr_matmul(&c->cpu, &down, w->a, cnt, w->y, e))
        return -1;
    if (mw->down_b) add_rows(w->y, mw->down_b + (size_t)x * d, cnt, w->d);
    *read += (uint64_t)gate.row_bytes * (uint64_t)gate.n_out + (uint64_t)up.row_bytes * (uint64_t)up.n_out +
             (sparse_down ? (uint64_t)down_t.row_bytes * (uint64_t)down_rows : (uint64_t)down.row_bytes * (uint64_t)down.n_out);
    weigh_into_ys(w, slot, cnt, w->y);
    return 0;
}

static void count_reads(hearth_ctx *c, int il, int32_t n, uint64_t bytes) {
    struct hr_moe_ws *w = c->moe;
    hearth_moe_stats *s = &w->st;
    if (il == 0) s->tokens += (uint64_t)n, s->decode_tokens += n == 1;
    s->read_bytes += bytes;
    if (n == 1) s->decode_read_bytes += bytes;
    c->ffn.stats[il].tokens += (uint64_t)n;
    uint64_t *routed = w->routed_n + (size_t)il * (size_t)w->ne;
    for (int32_t x = 0; x < w->ne; x++) routed[x] += (uint64_t)w->count[x];
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The rows of the routed device experts gathered into h_xe, grouped by expert; returns the
 * row count (each expert's first row and rows in dr0, dn). */
static int32_t gather_device_rows(hearth_ctx *c, const hr_gpu_layer *g, const float *xn) {
    struct hr_moe_ws *w = c->moe;
    const size_t d = (size_t)w->d;
    int32_t rows = 0;
    for (int32_t i = 0; i < g->n_exp; i++) {
        const int32_t x = g->exps[i].id; /* -1: an expert cache slot, empty or being filled */
        w->dr0[i] = rows, w->dn[i] = x < 0 ? 0 : w->count[x];
        if (x < 0) continue;
        const int32_t *slot = w->slot + w->start[x];
        for (int32_t j = 0; j < w->count[x]; j++, rows++)
            memcpy(c->hy->h_xe + (size_t)rows * d, xn + (size_t)(slot[j] / w->k) * d, d * sizeof(float));
    }
    for (int32_t i = 0; i < g->n_xhot; i++) { /* host experts with hot neurons: their rows after */
        const int32_t x = g->xhot[i].id, *slot = w->slot + w->start[x];
        /* an expert the cache holds whole in a ready slot runs there, its hot neurons idle */
        const bool whole = g->exp_local && g->exp_local[x] >= 0;
        w->xr0[i] = rows, w->xn[i] = whole ? 0 : w->count[x];
        if (whole) {
            c->hy->st.expert_split_cached += (uint64_t)w->count[x];
            continue;
        }
        for (int32_t j = 0; j < w->count[x]; j++, rows++)
            memcpy(c->hy->h_xe + (size_t)rows * d, xn + (size_t)(slot[j] / w->k) * d, d * sizeof(float));
    }
    return rows;
}

/* Predicted mode, the layer's split experts with a predictor: each one's scores over its rows
 * (already in h_xe) before the device starts, the hot neurons marked into h_emask
 * ([rows][n_hot] from the expert's first row) for the device and every neuron's mark into xpm
 * for the cold part; xmasked[i] says which ran. Experts without one run exact, unmasked. */
static int predict_split(hearth_ctx *c, const hr_moe_weights *mw, const hr_gpu_layer *g, uint64_t *read, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const size_t ff = (size_t)w->ff, d = (size_t)w->d;
    const float thr = c->m->sparse_threshold;
    for (int32_t i = 0; i < g->n_xhot; i++) {
        const hr_gpu_xhot *hx = &g->xhot[i];
        const int32_t x = hx->id, cnt = w->xn[i];
        w->xmasked[i] = cnt && mw->pred && mw->pred[x].data;
        if (!w->xmasked[i]) continue;
        memcpy(w->xg, c->hy->h_xe + (size_t)w->xr0[i] * d, sizeof(float) * (size_t)cnt * d);
        if (expert_scores(c, mw, x, cnt, e)) return -1;
        uint8_t *hm = c->hy->h_emask + (size_t)w->xr0[i] * ff, *pm = w->xpm + (size_t)w->xr0[i] * ff;
        for (size_t t = 0; t < (size_t)cnt; t++) {
            for (size_t j = 0; j < ff; j++) pm[t * ff + j] = w->ps[t * ff + j] >= thr;
            for (int32_t q = 0; q < hx->n_hot; q++) hm[t * (size_t)hx->n_hot + (size_t)q] = pm[t * ff + (size_t)hx->hot_ids[q]];
        }
        *read += (uint64_t)mw->pred[x].row_bytes * (uint64_t)mw->pred[x].n_out +
                 (uint64_t)mw->pred[w->ne + x].row_bytes * (uint64_t)mw->pred[w->ne + x].n_out;
    }
    return 0;
}

/* Host expert x whose hot neurons (hx) the device computes: the CPU computes the others as
 * --ffn exact does (gathered gate rows, up only where the gate fires, the sparse axpy over
 * down_t), and leaves that unweighted partial output in ys for add_expert_neurons. pm
 * (predicted mode: the rows' marks, xpm; NULL: exact): the gate of a cold neuron its
 * predictor did not mark is zeroed first, as expert_gate_predicted zeroes it. */
static int run_cold_expert(hearth_ctx *c, const hr_moe_weights *mw, int il, int32_t x, const hr_gpu_xhot *hx,
                           const uint8_t *pm, const float *xn, uint64_t *read, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const int32_t cnt = w->count[x], *slot = w->slot + w->start[x];
    const size_t d = (size_t)w->d, ff = (size_t)w->ff;
    for (int32_t i = 0; i < cnt; i++) memcpy(w->xg + i * d, xn + (size_t)(slot[i] / w->k) * d, d * sizeof(float));
    const hr_mat gate = hr_moe_expert(&mw->gate, x), up = hr_moe_expert(&mw->up, x), down_t = hr_moe_expert(&mw->down_t, x);
    const hr_mat down = hr_moe_expert(&mw->down, x);
    const bool sparse_down = mw->down_t.data != NULL;
    const int64_t nc = hx->n_cold;
    int64_t up_rows = 0, down_rows = 0;
    /* the gate of the cold neurons into w->g's [cnt][ff] rows, zero at the hot ones (never
     * firing here, so exact mode's union below leaves them to the device) */
    memset(w->g, 0, sizeof(float) * (size_t)cnt * ff);
    if (nc && hr_gather_matmul(&c->cpu, &gate, w->xg, cnt, hx->cold_ids, nc, w->gc, e)) return -1;
    uint64_t pc[3] = {0, 0, 0};
    for (int32_t i = 0; i < cnt; i++)
        for (int64_t q = 0; q < nc; q++) {
            const size_t j = (size_t)hx->cold_ids[q], at = (size_t)i * ff + j;
            const bool on = !pm || pm[at];
            w->g[at] = on ? w->gc[(size_t)i * (size_t)nc + (size_t)q] : 0.0f, pc[0] += on;
        }
    /* without ffn_down_exps_t the activations go back into full rows (zero at the hot
     * neurons, whose gate is zero here) for the dense down product, as exact mode does */
    uint64_t gate_on = 0;
    if (expert_exact(c, &up, cnt, !sparse_down, &up_rows, &gate_on, e)) return -1;
    const moe_buf b = base_buf(w);
    count_expert(c, il, x, cnt, true, up_rows, pm ? pc : NULL, gate_on, &b);
    if (sparse_down ? down_sparse(c, &down_t, cnt, true, up_rows, &down_rows, e) : hr_matmul(&c->cpu, &down, w->a, cnt, w->y, e))
        return -1;
    *read += (uint64_t)gate.row_bytes * (uint64_t)nc + (uint64_t)up.row_bytes * (uint64_t)up_rows +
             (sparse_down ? (uint64_t)down_t.row_bytes * (uint64_t)down_rows : (uint64_t)down.row_bytes * (uint64_t)down.n_out);
    for (int32_t i = 0; i < cnt; i++) memcpy(w->ys + (size_t)slot[i] * d, w->y + i * d, d * sizeof(float));
    return 0;
}

/* After the wait: each split expert's output = cold (in ys) + hot (h_ye), always in that
 * order, then times its weight, as run_expert weights its whole output. */
static void add_expert_neurons(hearth_ctx *c, const hr_gpu_layer *g, int il) {
    struct hr_moe_ws *w = c->moe;
    hr_hybrid *h = c->hy;
    const size_t d = (size_t)w->d;
    for (int32_t i = 0; i < g->n_xhot; i++) {
        const int32_t *slot = w->slot + w->start[g->xhot[i].id];
        for (int32_t j = 0; j < w->xn[i]; j++) {
            const float wt = w->w[slot[j]], *y = h->h_ye + (size_t)(w->xr0[i] + j) * d;
            float *dst = w->ys + (size_t)slot[j] * d;
            for (size_t q = 0; q < d; q++) dst[q] = (dst[q] + y[q]) * wt;
        }
        uint64_t acts = (uint64_t)w->xn[i] * (uint64_t)g->xhot[i].n_hot;
        if (h->plan.expert_masks && c->ffn.mode == HEARTH_FFN_PREDICTED && w->xmasked[i]) { /* the marked ones */
            const uint8_t *hm = h->h_emask + (size_t)w->xr0[i] * (size_t)w->ff;
            acts = 0;
            for (uint64_t q = 0; q < (uint64_t)w->xn[i] * (uint64_t)g->xhot[i].n_hot; q++) acts += hm[q];
        }
        c->ffn.stats[il].computed += acts, h->st.act_device += acts, h->st.expert_split_evals += (uint64_t)w->xn[i];
    }
}

/* Expert x of split layer g runs whole on the host: neither on the device nor split by hot neurons. */
static bool host_whole(const hr_gpu_layer *g, int32_t x) {
    return !(g->exp_local && g->exp_local[x] >= 0) && !(g->xhot_local && g->xhot_local[x] >= 0);
}

/* run_expert's bias and activation on rows [r0, r1) of an expert's gate and up. */
static void ep_act(void *arg, int64_t r0, int64_t r1) {
    const moe_item *it = arg;
    const size_t ff = (size_t)it->c->moe->ff;
    for (int32_t i = 0; i < it->cnt; i++) {
        float *g = it->g + (size_t)i * ff, *u = it->u + (size_t)i * ff;
        for (int64_t j = r0; it->gb && j < r1; j++) g[j] += it->gb[j];
        for (int64_t j = r0; it->ub && j < r1; j++) u[j] += it->ub[j];
        expert_act(it->c, it->a + (size_t)i * ff + (size_t)r0, g + r0, u + r0, r1 - r0);
    }
}

/* run_expert's bias and weighting on outputs [r0, r1) of an expert's down product, into ys. */
static void ep_scatter(void *arg, int64_t r0, int64_t r1) {
    const moe_item *it = arg;
    const struct hr_moe_ws *w = it->c->moe;
    const size_t d = (size_t)w->d;
    for (int32_t i = 0; i < it->cnt; i++) {
        float *y = it->y + (size_t)i * d, *dst = w->ys + (size_t)it->slot[i] * d;
        const float wt = w->w[it->slot[i]];
        for (int64_t j = r0; it->db && j < r1; j++) y[j] += it->db[j];
        for (int64_t j = r0; j < r1; j++) dst[j] = y[j] * wt;
    }
}

/* Dense experts can run in waves (run_waves): not the sparse modes, nor where per-expert
 * counts are taken from the buffers (--stats, calibration's neuron counts). */
static bool waves_fit(const hearth_ctx *c, const hr_moe_weights *mw) {
    const struct hr_moe_ws *w = c->moe;
    if (sparse_mode(c)) return false;
    if (w->fire_n || c->ffn.stats_on) return false;
    const hr_mat g = hr_moe_expert(&mw->gate, 0), u = hr_moe_expert(&mw->up, 0);
    return hr_matmul_pair_fits(&g, &u);
}

/* Expert x's place in a wave: its tokens' inputs at row `row` of xg, its products' items. */
static void wave_add(hearth_ctx *c, const hr_moe_weights *mw, int32_t x, int32_t row, const float *xn, int q) {
    struct hr_moe_ws *w = c->moe;
    const size_t d = (size_t)w->d, ff = (size_t)w->ff, r = (size_t)row;
    moe_item *it = &w->items[q];
    *it = (moe_item){.c = c, .gate = hr_moe_expert(&mw->gate, x), .up = hr_moe_expert(&mw->up, x),
                     .down = hr_moe_expert(mw->down_t.data ? &mw->down_t : &mw->down, x),
                     .gb = mw->gate_b ? mw->gate_b + (size_t)x * ff : NULL,
                     .ub = mw->up_b ? mw->up_b + (size_t)x * ff : NULL, .db = mw->down_b ? mw->down_b + (size_t)x * d : NULL,
                     .g = w->g + r * ff, .u = w->u + r * ff, .a = w->a + r * ff, .y = w->y + r * d,
                     .slot = w->slot + w->start[x], .x = x, .cnt = w->count[x]};
    it->act = (hr_mm_epi){ep_act, it}, it->scatter = (hr_mm_epi){ep_scatter, it};
    for (int32_t i = 0; i < it->cnt; i++)
        memcpy(w->xg + (r + (size_t)i) * d, xn + (size_t)(it->slot[i] / w->k) * d, d * sizeof(float));
    w->mm[q] = (hr_mm_item){.W = &it->gate, .W1 = &it->up, .X = w->xg + r * d, .n_tok = it->cnt, .Y = it->g, .Y1 = it->u,
                            .ep = &it->act};
}

/* Dense experts (of a split layer, g: those the host computes whole), as many at a time as
 * n_batch rows hold: the gate and up of all of them with their activations in one pool run,
 * then their down products with the weighting into ys in another (from ffn_down_exps_t: the
 * sparse axpys over every neuron, then the weighting). run_expert takes three runs per expert:
 * a decoded token's k experts are small products (hand-offs were 10-12% of a qwen3moe-shaped
 * decode at 2 threads), and a prompt spreads over many experts (64 tokens over 128 experts:
 * four tokens each). The values are run_expert's. */
static int run_waves(hearth_ctx *c, const hr_moe_weights *mw, int il, const hr_gpu_layer *g, const float *xn, uint64_t *read,
                     hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const bool dt = mw->down_t.data != NULL;
    for (int32_t x = 0; x < w->ne;) {
        int n = 0;
        int32_t rows = 0;
        for (; x < w->ne && rows + w->count[x] <= c->n_batch; x++) {
            if (!w->count[x] || (g && !host_whole(g, x))) continue;
            wave_add(c, mw, x, rows, xn, n++);
            rows += w->count[x];
        }
        if (hr_matmul_group(&c->cpu, w->mm, n, e)) return -1;
        for (int q = 0; q < n; q++) {
            const moe_item *it = &w->items[q];
            if (w->obs) w->obs(w->obs_ud, il, it->x, it->cnt, w->mm[q].X, it->a);
            const moe_buf b = {.g = it->g, .u = it->u};
            count_expert(c, il, it->x, it->cnt, false, it->gate.n_out, NULL, 0, &b);
            w->mm[q] = (hr_mm_item){.W = &it->down, .X = it->a, .n_tok = it->cnt, .Y = it->y, .ep = &it->scatter};
            w->ai[q] = (hr_sparse_item){.W = &it->down, .X = it->a, .n_tok = it->cnt, .idx = w->all, .n_idx = w->ff, .Y = it->y};
            const int64_t down_rows = dt ? rows_needed(it->a, it->cnt, w->ff) : it->down.n_out;
            *read += (uint64_t)it->gate.row_bytes * (uint64_t)it->gate.n_out + (uint64_t)it->up.row_bytes * (uint64_t)it->up.n_out +
                     (uint64_t)it->down.row_bytes * (uint64_t)down_rows;
        }
        if (dt ? hr_sparse_axpy_group(&c->cpu, &c->sparse_ws, w->ai, n, e) : hr_matmul_group(&c->cpu, w->mm, n, e)) return -1;
        for (int q = 0; dt && q < n; q++) ep_scatter(&w->items[q], 0, w->d);
    }
    return 0;
}

/* ReLU of rows [r0, r1) of an expert's predictor hidden units, as expert_scores does. */
static void ep_relu(void *arg, int64_t r0, int64_t r1) {
    const moe_item *it = arg;
    const int64_t rank = it->gate.n_out; /* fc1's */
    for (int32_t i = 0; i < it->cnt; i++)
        for (int64_t j = r0; j < r1; j++) {
            float *v = it->g + (size_t)i * (size_t)rank + (size_t)j;
            *v = *v > 0 ? *v : 0.0f;
        }
}

/* The products of one kind of a sparse wave's n experts in one pool run (0: the gates of the
 * experts without a predictor, 1: fc1 with its ReLU, 2: fc2); the predictors' are profiled as
 * the predictor's. The inputs are each item's a. */
static int sparse_group(hearth_ctx *c, int n, int kind, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    int m = 0;
    for (int q = 0; q < n; q++) {
        moe_item *it = &w->items[q];
        if ((kind == 0) == it->pred) continue;
        if (kind == 0) w->mm[m++] = (hr_mm_item){.W = &it->gate, .X = it->a, .n_tok = it->cnt, .Y = it->g};
        else if (kind == 1) w->mm[m++] = (hr_mm_item){.W = &it->gate, .X = it->a, .n_tok = it->cnt, .Y = it->g, .ep = &it->act};
        else w->mm[m++] = (hr_mm_item){.W = &it->up, .X = it->g, .n_tok = it->cnt, .Y = it->u};
    }
    if (!m) return 0;
    if (kind == 0 || !c->cpu.prof) return hr_matmul_group(&c->cpu, w->mm, m, e);
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    c->cpu.prof->scope = HR_PROF_PREDICTOR;
    return pred_done(c, pm, hr_matmul_group(&c->cpu, w->mm, m, e));
}

/* Exact and predicted mode (of a split layer, g: the experts the host computes whole), as many
 * experts at a time as n_batch rows hold: their inputs gathered, then in one pool run each the
 * gates of the experts without a predictor, and the fc1 (with ReLU) and fc2 of those with
 * one, then sparse_experts' steps for all of them, each expert on its own rows of the buffers
 * (wave_buf). run_expert takes 3-6 pool runs per expert; a wave takes 3-6 in all. */
static int sparse_waves(hearth_ctx *c, const hr_moe_weights *mw, int il, const hr_gpu_layer *g, const float *xn, uint64_t *read,
                        hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    const size_t d = (size_t)w->d, rk = (size_t)w->max_rank;
    for (int32_t x = 0; x < w->ne;) {
        int n = 0;
        int32_t rows = 0;
        for (; x < w->ne && rows + w->count[x] <= c->n_batch; x++) {
            if (!w->count[x] || (g && !host_whole(g, x))) continue;
            const bool pred = c->ffn.mode == HEARTH_FFN_PREDICTED && mw->pred && mw->pred[x].data;
            const moe_buf b = wave_buf(w, (size_t)rows, n);
            moe_item *it = &w->items[n++];
            *it = (moe_item){.c = c, .gate = pred ? mw->pred[x] : hr_moe_expert(&mw->gate, x), .a = b.xg,
                             .g = pred ? w->ph + (size_t)rows * rk : b.g, .u = pred ? b.ps : NULL,
                             .slot = w->slot + w->start[x], .x = x, .cnt = w->count[x], .pred = pred, .b = b};
            if (pred) it->up = mw->pred[w->ne + x];
            it->act = (hr_mm_epi){ep_relu, it};
            for (int32_t i = 0; i < it->cnt; i++)
                memcpy(b.xg + (size_t)i * d, xn + (size_t)(it->slot[i] / w->k) * d, d * sizeof(float));
            rows += it->cnt;
        }
        for (int kind = 0; kind < 3; kind++)
            if (sparse_group(c, n, kind, e)) return -1;
        if (sparse_experts(c, mw, il, w->items, n, read, e)) return -1;
    }
    return 0;
}

/* The experts the host computes whole (g NULL: every routed one) in waves, dense or sparse as
 * the mode is; *done false where neither fits (nothing done: run_expert one by one). */
static int host_waves(hearth_ctx *c, const hr_moe_weights *mw, int il, const hr_gpu_layer *g, const float *xn, bool *done,
                      uint64_t *read, hr_err *e) {
    *done = true;
    if (waves_fit(c, mw)) return run_waves(c, mw, il, g, xn, read, e);
    if (sparse_mode(c)) return sparse_waves(c, mw, il, g, xn, read, e);
    *done = false;
    return 0;
}

/* Layer il's host experts: whole on the CPU (in waves where they fit), or its cold part where
 * the device holds hot neurons. */
static int run_host_experts(hearth_ctx *c, const hr_layer *L, int il, const hr_gpu_layer *g, const uint8_t *xmask,
                            const float *xn, uint64_t *read, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    bool waves;
    if (host_waves(c, &L->moe, il, g, xn, &waves, read, e)) return -1;
    for (int32_t x = 0; x < w->ne; x++) {
        if (!w->count[x] || (g->exp_local && g->exp_local[x] >= 0) || (waves && host_whole(g, x))) continue;
        const int32_t xi = g->xhot_local ? g->xhot_local[x] : -1;
        const uint8_t *pm = xi >= 0 && xmask && xmask[xi] ? w->xpm + (size_t)w->xr0[xi] * (size_t)w->ff : NULL;
        if (xi >= 0 ? run_cold_expert(c, &L->moe, il, x, &g->xhot[xi], pm, xn, read, e)
                    : run_expert(c, &L->moe, il, x, xn, read, e))
            return -1;
    }
    return 0;
}

/* Split MoE: the device experts enqueued, the host experts computed meanwhile, then the
 * device outputs weighted into ys like the host's (the sum over ranks follows, unchanged). */
static int split_experts(hearth_ctx *c, const hr_layer *L, int il, const float *xn, uint64_t *read, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    hr_hybrid *h = c->hy;
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    const double t0 = now_s();
    if (hr_ecache_begin(c, il, e)) return -1; /* refilled slots whose copies landed join */
    const int32_t rows = gather_device_rows(c, g, xn);
    /* predicted mode: the split experts' predictors first, so the device masks their hot part */
    const uint8_t *xmask = h->plan.expert_masks && c->ffn.mode == HEARTH_FFN_PREDICTED && w->xmasked ? w->xmasked : NULL;
    if (xmask && predict_split(c, &L->moe, g, read, e)) return -1;
    if (hr_hybrid_experts(c, il, w->dr0, w->dn, w->xr0, w->xn, xmask, rows, e)) return -1;
    const double t1 = now_s();
    if (run_host_experts(c, L, il, g, xmask, xn, read, e)) return hr_hy_abandon(h);
    const double t2 = now_s();
    if (rows && hr_hy_sync(h, e)) return -1;
    h->st.ffn_splits++, h->st.enqueue_s += t1 - t0, h->st.cold_s += t2 - t1, h->st.wait_s += now_s() - t2;
    for (int32_t i = 0; i < g->n_exp; i++) {
        if (!w->dn[i]) continue;
        weigh_into_ys(w, w->slot + w->start[g->exps[i].id], w->dn[i], h->h_ye + (size_t)w->dr0[i] * (size_t)w->d);
        const uint64_t evals = (uint64_t)w->dn[i];
        c->ffn.stats[il].computed += evals * (uint64_t)w->ff, h->st.act_device += evals * (uint64_t)w->ff;
        h->st.expert_evals_device += evals;
    }
    add_expert_neurons(c, g, il);
    return hr_ecache_end(c, il, w->count, e); /* hits counted, refills chosen and enqueued */
}

int hr_moe_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *xn, int32_t n, float *out, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    if (route(c, L, xn, n, e)) return -1;
    if (w->trace && hr_rtrace_append(w->trace, il, n, w->k, w->sel, e)) return -1;
    uint64_t read = 0;
    if (c->hy && c->hy->dev) c->hy->st.expert_evals_total += (uint64_t)n * (uint64_t)w->k;
    /* the host counts firing neurons (calibration) only of experts it computes */
    if (hr_hybrid_step(c, il) == HR_STEP_SPLIT_MOE && !w->fire_n) {
        if (split_experts(c, L, il, xn, &read, e)) return -1;
    } else {
        bool waves;
        if (host_waves(c, &L->moe, il, NULL, xn, &waves, &read, e)) return -1;
        for (int32_t x = 0; !waves && x < w->ne; x++)
            if (w->count[x] && run_expert(c, &L->moe, il, x, xn, &read, e)) return -1;
    }
    const size_t d = (size_t)w->d;
    for (int32_t t = 0; t < n; t++) { /* rank order, as llama.cpp adds the expert views */
        const float *ys = w->ys + (size_t)t * (size_t)w->k * d;
        float *o = out + (size_t)t * d;
        memcpy(o, ys, d * sizeof(float));
        for (int32_t r = 1; r < w->k; r++)
            for (size_t j = 0; j < d; j++) o[j] += ys[(size_t)r * d + j];
    }
    count_reads(c, il, n, read);
    return 0;
}

int hr_moe_count_neurons(hearth_ctx *c, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    if (!w) return hr_errf(e, "not a mixture-of-experts model");
    if (w->fire_n) return 0;
    const size_t n = (size_t)c->m->hp.n_layer * (size_t)w->ne * (size_t)w->ff;
    if (!(w->fire_n = calloc(n, sizeof *w->fire_n))) return hr_errf(e, "out of memory for %zu expert neuron counters", n);
    c->scratch_bytes += n * sizeof *w->fire_n;
    return 0;
}

const uint32_t *hr_moe_neuron_counts(const hearth_ctx *c, int il) {
    if (!c->moe || !c->moe->fire_n || il < 0 || il >= c->m->hp.n_layer) return NULL;
    return c->moe->fire_n + (size_t)il * (size_t)c->moe->ne * (size_t)c->moe->ff;
}

int hr_moe_set_observer(hearth_ctx *c, hr_moe_observer fn, void *ud, hr_err *e) {
    if (!c->moe) return hr_errf(e, "not a mixture-of-experts model");
    c->moe->obs = fn, c->moe->obs_ud = ud;
    return 0;
}

int hearth_ctx_moe_pred_stats(const hearth_ctx *c, int32_t il, uint64_t *predicted, uint64_t *fired, uint64_t *both) {
    const struct hr_moe_ws *w = c->moe;
    if (!w || !w->pred_n || il < 0 || il >= c->m->hp.n_layer || !predicted || !fired || !both) return -1;
    const uint64_t *pn = w->pred_n + (size_t)il * (size_t)w->ne * 3;
    for (int32_t x = 0; x < w->ne; x++) predicted[x] = pn[3 * x], fired[x] = pn[3 * x + 1], both[x] = pn[3 * x + 2];
    return 0;
}

int hearth_ctx_dump_routing(hearth_ctx *c, const char *path, hr_err *e) {
    struct hr_moe_ws *w = c->moe;
    if (!w) return hr_errf(e, "--dump-routing: the model is not a mixture of experts");
    if (w->trace) fclose(w->trace), w->trace = NULL;
    return hr_rtrace_create(path, c->m->hp.n_layer, w->ne, w->k, &w->trace, e);
}

const int32_t *hr_moe_last_experts(const hearth_ctx *c) { return c->moe ? c->moe->sel : NULL; }
const float *hr_moe_last_weights(const hearth_ctx *c) { return c->moe ? c->moe->w : NULL; }

int hearth_ctx_moe_stats(const hearth_ctx *c, hearth_moe_stats *out) {
    if (!c->moe) return -1;
    *out = c->moe->st;
    return 0;
}

float hearth_ctx_moe_margin(hearth_ctx *c) {
    if (!c->moe) return NAN;
    const float m = c->moe->margin;
    c->moe->margin = INFINITY;
    return m;
}

int hearth_ctx_moe_routed(const hearth_ctx *c, int32_t il, uint64_t *counts) {
    if (!c->moe || il < 0 || il >= c->m->hp.n_layer || !counts) return -1;
    memcpy(counts, c->moe->routed_n + (size_t)il * (size_t)c->moe->ne, sizeof(uint64_t) * (size_t)c->moe->ne);
    return 0;
}
