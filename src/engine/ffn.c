/* One layer's FFN in dense, exact, predicted or threshold mode. Sparse modes build, per token, a
 * mask of the neurons to compute; the batch computes the union of the masks (gathered
 * rows), zeroes each token's inactive neurons, and projects down with a sparse axpy over
 * rows of ffn_down_t (or a dense product when the file has only ffn_down). */
#include <math.h>
#include <string.h>
#include "backends/cpu/sparse.h"
#include "ffn.h"
#include "hybrid.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/prof.h"

/* Above this share of neurons in the batch's union, dense products beat gathers. */
#define HR_UNION_DENSE_SHARE 0.6

typedef struct {
    hearth_ctx *c;
    const hr_ffn_weights *f;
    const float *xn;
    int32_t n;
    int64_t ff;
    int il;
} ffn_job;

static void add_bias(float *y, const float *b, int64_t n_tok, int64_t n) {
    if (!b) return;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n; i++) y[t * n + i] += b[i];
}

/* out = down · A for A over the neurons idx[0..nu) ([n][nu]). */
static int project_down(const ffn_job *j, const float *A, const int32_t *idx, int64_t nu, float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    int r;
    if (j->f->down_t.data) {
        r = hr_sparse_axpy_ws(&c->cpu, &c->sparse_ws, &j->f->down_t, A, j->n, idx, nu, out, e);
    } else if (nu == j->ff) {
        r = hr_matmul(&c->cpu, &j->f->down, A, j->n, out, e);
    } else { /* only ffn_down {n_ff, n_embd}: scatter into full rows, zeros elsewhere */
        memset(c->sc.h, 0, sizeof(float) * (size_t)(j->n * j->ff));
        for (int32_t t = 0; t < j->n; t++)
            for (int64_t i = 0; i < nu; i++) c->sc.h[t * j->ff + idx[i]] = A[t * nu + i];
        r = hr_matmul(&c->cpu, &j->f->down, c->sc.h, j->n, out, e);
    }
    if (!r) add_bias(out, j->f->b_down, j->n, c->m->hp.n_embd);
    return r;
}

/* Gate and up for the neurons idx (all of them when nu == ff), into c->sc.g and c->sc.u as [n][nu]. */
static int gate_up(const ffn_job *j, const int32_t *idx, int64_t nu, bool need_gate, hr_err *e) {
    hearth_ctx *c = j->c;
    const hr_ffn_weights *f = j->f;
    bool all = nu == j->ff;
    if (need_gate && f->gate.data &&
        (all ? hr_matmul(&c->cpu, &f->gate, j->xn, j->n, c->sc.g, e) : hr_gather_matmul(&c->cpu, &f->gate, j->xn, j->n, idx, nu, c->sc.g, e)))
        return -1;
    if (all ? hr_matmul(&c->cpu, &f->up, j->xn, j->n, c->sc.u, e) : hr_gather_matmul(&c->cpu, &f->up, j->xn, j->n, idx, nu, c->sc.u, e))
        return -1;
    if (f->b_up) {
        for (int32_t t = 0; t < j->n; t++)
            for (int64_t i = 0; i < nu; i++) c->sc.u[t * nu + i] += f->b_up[idx[i]];
    }
    return 0;
}

/* Union of the per-token masks into c->ffn.idx; returns its size. */
static int64_t mask_union(const ffn_job *j) {
    const uint8_t *mk = j->c->ffn.mask;
    const hr_prof_mark pm = hr_prof_begin(j->c->cpu.prof);
    int64_t nu = 0;
    for (int64_t k = 0; k < j->ff; k++) {
        uint8_t any = 0;
        for (int32_t t = 0; t < j->n && !any; t++) any = mk[t * j->ff + k];
        if (any) j->c->ffn.idx[nu++] = (int32_t)k;
    }
    hr_prof_end(j->c->cpu.prof, pm, HR_PROF_ELEM, 0, (uint64_t)(j->n * j->ff) + (uint64_t)nu * 4);
    return nu;
}

/* Activations of the union's neurons from c->sc.g/c->sc.u ([n][nu]); masked-out entries zeroed. */
static void activate(const ffn_job *j, const int32_t *idx, int64_t nu, float *A) {
    const hr_hparams *hp = &j->c->m->hp;
    const hr_prof_mark pm = hr_prof_begin(j->c->cpu.prof);
    hr_ffn_act_tab(A, j->f->gate.data ? j->c->sc.g : NULL, j->c->sc.u, j->n * nu, hp->act, j->c->m->gelu_tab);
    const uint8_t *mk = j->c->ffn.mask;
    for (int32_t t = 0; t < j->n; t++)
        for (int64_t i = 0; i < nu; i++)
            if (!mk[t * j->ff + idx[i]]) A[t * nu + i] = 0.0f;
    hr_prof_end(j->c->cpu.prof, pm, HR_PROF_ELEM, 0, (uint64_t)(j->n * nu) * 13);
}

static void act_rows(float *a, const float *g, const float *u, int64_t n, void *arg) {
    const hearth_model *m = arg;
    hr_ffn_act_tab(a, g, u, n, m->hp.act, m->gelu_tab);
}

/* One token over bundled rows (ffn_bundle.c): gate, up, activation and down per group of 4
 * neurons, so a neuron's three adjacent rows are read together (bench_bundle: 1.03-1.22x the
 * three passes at 30% of the neurons); the values are the three passes' bit for bit. */
static bool fused(const ffn_job *j, int64_t nu) {
    const hr_ffn_weights *f = j->f;
    return j->n == 1 && nu < j->ff && f->gate.data && f->gate.stride && f->down_t.data && !f->b_up &&
           hr_sparse_ffn_fits(&j->c->cpu, &f->gate);
}

/* Up's bias and the activation of neurons [r0, r1) of every token, into ffn_a: run by each
 * chunk of the dense up (or gate and up) product on the rows it has just computed, so the
 * element-wise work is spread over the pool. Per element it is gate_up's bias add and
 * hr_ffn_act_tab's value, so the result does not depend on the chunks. */
static void dense_act_rows(void *arg, int64_t r0, int64_t r1) {
    const ffn_job *j = arg;
    hearth_ctx *c = j->c;
    const float *b = j->f->b_up;
    for (int32_t t = 0; t < j->n; t++) {
        const int64_t o = t * j->ff + r0;
        if (b)
            for (int64_t i = 0; i < r1 - r0; i++) c->sc.u[o + i] += b[r0 + i];
        hr_ffn_act_tab(c->ffn.a + o, j->f->gate.data ? c->sc.g + o : NULL, c->sc.u + o, r1 - r0, c->m->hp.act, c->m->gelu_tab);
    }
}

/* dense_act_rows, then each token's neurons outside its mask zeroed: a masked batch whose
 * union took the dense products, with activate's values, in the products' chunks. */
static void masked_act_rows(void *arg, int64_t r0, int64_t r1) {
    const ffn_job *j = arg;
    dense_act_rows(arg, r0, r1);
    const uint8_t *mk = j->c->ffn.mask;
    float *a = j->c->ffn.a;
    for (int32_t t = 0; t < j->n; t++)
        for (int64_t i = r0; i < r1; i++)
            if (!mk[t * j->ff + i]) a[t * j->ff + i] = 0.0f;
}

/* Gate and up in one pool run where their types and shapes agree (one activation prep),
 * the activation (act: dense_act_rows or masked_act_rows) in that run's chunks; then down. */
static int dense_products(const ffn_job *j, void (*act)(void *, int64_t, int64_t), float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    const hr_ffn_weights *f = j->f;
    const hr_mm_epi ep = {act, (void *)j};
    int r;
    if (f->gate.data && hr_matmul_pair_fits(&f->gate, &f->up))
        r = hr_matmul_pair(&c->cpu, &f->gate, &f->up, j->xn, j->n, c->sc.g, c->sc.u, &ep, e);
    else
        r = (f->gate.data && hr_matmul(&c->cpu, &f->gate, j->xn, j->n, c->sc.g, e)) ||
            hr_matmul_ep(&c->cpu, &f->up, j->xn, j->n, c->sc.u, &ep, e);
    return r ? -1 : project_down(j, c->ffn.a, c->ffn.all, j->ff, out, e);
}

static int ffn_dense(const ffn_job *j, float *out, hr_err *e) { return dense_products(j, dense_act_rows, out, e); }

/* Computes the masked FFN given c->ffn.mask. Past HR_UNION_DENSE_SHARE of the neurons the
 * batch's union takes the dense products, the masks applied in their chunks. */
static int ffn_masked(const ffn_job *j, float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    int64_t nu = mask_union(j);
    const int32_t *idx = c->ffn.idx;
    if (nu > HR_UNION_DENSE_SHARE * (double)j->ff) return dense_products(j, masked_act_rows, out, e);
    if (fused(j, nu)) {
        const hr_ffn_weights *f = j->f;
        if (hr_sparse_ffn_fused(&c->cpu, &c->sparse_ws, &f->gate, &f->up, &f->down_t, j->xn, idx, nu, act_rows,
                                (void *)c->m, c->sc.g, c->sc.u, c->ffn.a, out, e))
            return -1;
        add_bias(out, f->b_down, 1, c->m->hp.n_embd);
        return 0;
    }
    if (gate_up(j, idx, nu, true, e)) return -1;
    activate(j, idx, nu, c->ffn.a);
    return project_down(j, c->ffn.a, idx, nu, out, e);
}

/* Exact: the first product decides which neurons fire (gate > 0, or up > 0 without a gate). */
static int ffn_exact(const ffn_job *j, float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    const hr_ffn_weights *f = j->f;
    if (!f->gate.data) { /* plain ReLU: up is the deciding product; down only for up > 0 */
        if (gate_up(j, c->ffn.all, j->ff, false, e)) return -1;
        for (int64_t i = 0; i < j->n * j->ff; i++) c->ffn.mask[i] = c->sc.u[i] > 0;
        int64_t nu = mask_union(j);
        for (int32_t t = 0; t < j->n; t++)
            for (int64_t i = 0; i < nu; i++) {
                float u = c->sc.u[t * j->ff + c->ffn.idx[i]];
                c->ffn.a[t * nu + i] = u > 0 ? u : 0.0f;
            }
        return project_down(j, c->ffn.a, c->ffn.idx, nu, out, e);
    }
    if (hr_matmul(&c->cpu, &f->gate, j->xn, j->n, c->ffn.s, e)) return -1;
    for (int64_t i = 0; i < j->n * j->ff; i++) c->ffn.mask[i] = c->ffn.s[i] > 0;
    int64_t nu = mask_union(j);
    if (hr_gather_matmul(&c->cpu, &f->up, j->xn, j->n, c->ffn.idx, nu, c->sc.u, e)) return -1;
    for (int32_t t = 0; t < j->n; t++)
        for (int64_t i = 0; i < nu; i++) {
            c->sc.g[t * nu + i] = c->ffn.s[t * j->ff + c->ffn.idx[i]];
            if (f->b_up) c->sc.u[t * nu + i] += f->b_up[c->ffn.idx[i]];
        }
    activate(j, c->ffn.idx, nu, c->ffn.a);
    return project_down(j, c->ffn.a, c->ffn.idx, nu, out, e);
}

/* The dense switch of thr_up_down, run by each chunk of the up product on its rows: the gate
 * products from c->ffn.s into c->sc.g, up's bias, the activation and each token's mask, with
 * the copy loop's and activate's values. */
static void thr_act_rows(void *arg, int64_t r0, int64_t r1) {
    const ffn_job *j = arg;
    hearth_ctx *c = j->c;
    for (int32_t t = 0; t < j->n; t++) {
        const int64_t o = t * j->ff + r0;
        memcpy(c->sc.g + o, c->ffn.s + o, sizeof(float) * (size_t)(r1 - r0));
    }
    masked_act_rows(arg, r0, r1);
}

/* Up and down for the neurons of c->ffn.mask, their gate products in c->ffn.s ([n][ff]; read
 * only where the mask is set); past HR_UNION_DENSE_SHARE of the batch's union, up is one
 * dense product, the activation in its chunks. */
static int thr_up_down(const ffn_job *j, float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    int64_t nu = mask_union(j);
    const int32_t *idx = c->ffn.idx;
    if (nu > HR_UNION_DENSE_SHARE * (double)j->ff) {
        const hr_mm_epi ep = {thr_act_rows, (void *)j};
        if (hr_matmul_ep(&c->cpu, &j->f->up, j->xn, j->n, c->sc.u, &ep, e)) return -1;
        return project_down(j, c->ffn.a, c->ffn.all, j->ff, out, e);
    }
    if (gate_up(j, idx, nu, false, e)) return -1;
    for (int32_t t = 0; t < j->n; t++)
        for (int64_t i = 0; i < nu; i++) c->sc.g[t * nu + i] = c->ffn.s[t * j->ff + idx[i]];
    activate(j, idx, nu, c->ffn.a);
    return project_down(j, c->ffn.a, idx, nu, out, e);
}

/* |act(gate)| of rows [r0, r1) of every token against the layer's bound, into the mask (ffn_a
 * is free until the activation): run by each chunk of the gate product on its rows. */
static void thr_mask_rows(void *arg, int64_t r0, int64_t r1) {
    const ffn_job *j = arg;
    hearth_ctx *c = j->c;
    const float thr = c->m->ffn_thr[j->il];
    for (int32_t t = 0; t < j->n; t++) {
        const int64_t o = t * j->ff + r0;
        hr_ffn_gate_mag(c->ffn.a + o, c->ffn.s + o, r1 - r0, c->m->hp.act, c->m->gelu_tab);
        for (int64_t i = o; i < o + (r1 - r0); i++) c->ffn.mask[i] = c->ffn.a[i] > thr;
    }
}

/* Threshold: the gate fully; neurons whose |act(gate)| is above the layer's bound get up
 * and down. Past HR_UNION_DENSE_SHARE of the batch's union, up is one dense product (the
 * gathered rows' values bit for bit), so threshold 0 equals dense exactly for SwiGLU; a
 * token's result never depends on the other tokens of its batch (sparse.h). */
static int ffn_threshold(const ffn_job *j, float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    const hr_mm_epi ep = {thr_mask_rows, (void *)j};
    if (hr_matmul_ep(&c->cpu, &j->f->gate, j->xn, j->n, c->ffn.s, &ep, e)) return -1;
    return thr_up_down(j, out, e);
}

/* Predicted mode on a file with thresholds: the predictor's neurons (c->ffn.mask) get their
 * gate rows (the union's: gathered, or one dense product past HR_UNION_DENSE_SHARE, as in
 * threshold mode, so a predictor that marks every neuron gives threshold mode's output bit
 * for bit); those above the layer's bound then get up and down. A neuron not predicted is
 * skipped even when it would pass the threshold: the predictor's recall bounds the loss. */
static int ffn_thr_predicted(const ffn_job *j, float *out, hr_err *e) {
    hearth_ctx *c = j->c;
    const float thr = c->m->ffn_thr[j->il];
    int64_t np = mask_union(j);
    const int32_t *idx = c->ffn.idx;
    if (np > HR_UNION_DENSE_SHARE * (double)j->ff) idx = c->ffn.all, np = j->ff;
    if (np == j->ff ? hr_matmul(&c->cpu, &j->f->gate, j->xn, j->n, c->sc.g, e)
                    : hr_gather_matmul(&c->cpu, &j->f->gate, j->xn, j->n, idx, np, c->sc.g, e))
        return -1;
    hr_ffn_gate_mag(c->ffn.a, c->sc.g, j->n * np, c->m->hp.act, c->m->gelu_tab);
    for (int32_t t = 0; t < j->n; t++) /* ffn_s (the scores, now in the mask) takes the gate in full rows */
        for (int64_t i = 0; i < np; i++) {
            const int64_t k = t * j->ff + idx[i];
            c->ffn.s[k] = c->sc.g[t * np + i];
            c->ffn.mask[k] = c->ffn.mask[k] && c->ffn.a[t * np + i] > thr;
        }
    return thr_up_down(j, out, e);
}

const float *hr_ffn_last_gate(const hearth_ctx *c) { return c->sc.g; }

/* Ends the predictor's profile scope (prof.h); returns r. */
static int pred_done(hearth_ctx *c, hr_prof_mark pm, int r) {
    if (!c->cpu.prof) return r;
    c->cpu.prof->scope = -1;
    hr_prof_end(c->cpu.prof, pm, HR_PROF_PREDICTOR, 0, 0);
    return r;
}

/* A linear predictor's masks: every score block at or above its bias times the token's
 * RMS (the scores are linear in x, the bias was fitted on RMS-normalised inputs), or for a
 * band either side. */
static void linear_masks(const ffn_job *j, const float *x, const float *sc) {
    const hr_ffn_weights *f = j->f;
    const int64_t d = j->c->m->hp.n_embd, ff = j->ff, w = f->pred_m * ff;
    for (int64_t t = 0; t < j->n; t++) {
        double ss = 0;
        for (int64_t i = 0; i < d; i++) ss += (double)x[t * d + i] * x[t * d + i];
        const float rms = (float)sqrt(ss / (double)d + (double)j->c->m->hp.rms_eps);
        const float *s = sc + t * w;
        uint8_t *mk = j->c->ffn.mask + t * ff;
        for (int64_t n = 0; f->pred_band && n < ff; n++)
            mk[n] = s[n] + f->pred_b[n] * rms >= 0.0f || -s[n] + f->pred_b[ff + n] * rms >= 0.0f;
        for (int64_t n = 0; !f->pred_band && n < ff; n++) {
            bool on = true;
            for (int32_t b = 0; b < f->pred_m; b++) on = on && s[b * ff + n] + f->pred_b[b * ff + n] * rms >= 0.0f;
            mk[n] = on;
        }
    }
}

/* Predictor: score = fc2 · relu(fc1 · x) (PowerInfer's form; neuron active iff score >=
 * threshold) or fc2 · fc1 · x (the linear form, linear_masks). */
static int predict(const ffn_job *j, const hr_ffn_dev *d, const float *x, hr_err *e) {
    hearth_ctx *c = j->c;
    const hr_ffn_weights *f = j->f;
    const int64_t r = f->fc1.n_out;
    const float *sc = d->in.scores ? d->in.scores : c->ffn.s; /* given: computed with the attention, in one round trip */
    const hr_prof_mark pm = hr_prof_begin(c->cpu.prof);
    if (c->cpu.prof) c->cpu.prof->scope = HR_PROF_PREDICTOR; /* fc1/fc2 charged here, not to matvec */
    if (d->in.scores) {
    } else if (d->pred) {
        if (hr_hybrid_predict(c, j->il, x, j->n, c->ffn.s, e)) return pred_done(c, pm, -1);
    } else {
        if (hr_matmul(&c->cpu, &f->fc1, x, j->n, c->ffn.ph, e)) return pred_done(c, pm, -1);
        if (!f->pred_b)
            for (int64_t i = 0; i < j->n * r; i++) c->ffn.ph[i] = c->ffn.ph[i] > 0 ? c->ffn.ph[i] : 0.0f;
        if (hr_matmul(&c->cpu, &f->fc2, c->ffn.ph, j->n, c->ffn.s, e)) return pred_done(c, pm, -1);
    }
    if (f->pred_b) {
        linear_masks(j, x, sc);
        return pred_done(c, pm, 0);
    }
    const float thr = c->m->sparse_threshold;
    for (int64_t i = 0; i < j->n * j->ff; i++) c->ffn.mask[i] = sc[i] >= thr;
    return pred_done(c, pm, 0);
}

/* Neurons computed: always counted (one pass over the masks), so benchmarks can report
 * the bytes a sparse token really reads. */
static void count_computed(const ffn_job *j, int il, hearth_ffn_mode mode) {
    hearth_ffn_stats *s = &j->c->ffn.stats[il];
    s->tokens += (uint64_t)j->n;
    if (mode == HEARTH_FFN_DENSE) {
        s->computed += (uint64_t)(j->n * j->ff);
        return;
    }
    uint64_t k = 0;
    for (int64_t i = 0; i < j->n * j->ff; i++) k += j->c->ffn.mask[i];
    s->computed += k;
}

/* --stats: how many neurons really fire (activation != 0), and how many of those were
 * computed. Costs full products with gate (and up, for dReLU; or up alone without a gate). */
static int count_fired(const ffn_job *j, int il, hearth_ffn_mode mode, hr_err *e) {
    hearth_ctx *c = j->c;
    hearth_ffn_stats *s = &c->ffn.stats[il];
    const hr_ffn_weights *f = j->f;
    const bool drelu = c->m->hp.act == HR_ACT_DRELU && f->gate.data;
    /* ffn_s is free here: predictor scores are already turned into the mask. */
    if (hr_matmul(&c->cpu, f->gate.data ? &f->gate : &f->up, j->xn, j->n, c->ffn.a, e) ||
        (drelu && hr_matmul(&c->cpu, &f->up, j->xn, j->n, c->ffn.s, e)))
        return -1;
    for (int64_t i = 0; i < j->n * j->ff; i++) {
        const float b = f->b_up ? f->b_up[i % j->ff] : 0.0f;
        bool fired = f->gate.data ? c->ffn.a[i] > 0 : c->ffn.a[i] + b > 0;
        if (drelu) fired = fired && c->ffn.s[i] + b > 0;
        bool computed = mode == HEARTH_FFN_PREDICTED || mode == HEARTH_FFN_THRESHOLD ? c->ffn.mask[i]
                        : mode == HEARTH_FFN_EXACT                                   ? fired
                                                                                     : true;
        s->fired += fired, s->fired_computed += fired && computed;
    }
    return 0;
}

int hr_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *x, const float *xn, int32_t n, float *out, hr_err *e) {
    const hr_ffn_dev d = hr_hybrid_ffn_parts(c, il);
    return hr_ffn_dev_run(c, L, il, x, xn, n, &d, out, e);
}

int hr_ffn_dev_run(hearth_ctx *c, const hr_layer *L, int il, const float *x, const float *xn, int32_t n, const hr_ffn_dev *d,
                   float *out, hr_err *e) {
    ffn_job j = {c, &L->ffn, xn, n, c->m->hp.n_ff, il};
    const hearth_ffn_mode mode = c->ffn.mode;
    const bool fired = c->ffn.stats_on && hr_act_relu_family(c->m->hp.act);
    int r;
    switch (mode) {
    case HEARTH_FFN_PREDICTED:
        if (predict(&j, d, x, e) || (fired && count_fired(&j, il, mode, e))) return -1;
        if (d->split && c->m->ffn_thr) r = hr_hybrid_ffn_split_thr(c, L, il, xn, d->in.xn_on_dev, n, true, out, e);
        else if (d->split) r = hr_hybrid_ffn_split(c, L, il, xn, d->in.xn_on_dev, n, out, e);
        else r = c->m->ffn_thr ? ffn_thr_predicted(&j, out, e) : ffn_masked(&j, out, e);
        if (!r && c->ffn.stats_on && c->m->ffn_thr && !fired) r = hr_ffn_thr_count_fired(c, j.f, il, xn, n, e);
        break;
    case HEARTH_FFN_EXACT:
        if (fired && count_fired(&j, il, mode, e)) return -1;
        if (d->whole) { /* exact equals dense for ReLU-family FFNs */
            memset(c->ffn.mask, 1, (size_t)(n * j.ff));
            r = hr_hybrid_ffn_dense(c, il, xn, n, out, e);
        } else r = ffn_exact(&j, out, e); /* builds the mask it counts */
        break;
    case HEARTH_FFN_THRESHOLD:
        if (d->split) r = hr_hybrid_ffn_split_thr(c, L, il, xn, d->in.xn_on_dev, n, false, out, e); /* builds the mask too */
        else if (d->whole) { /* a layer the GPU plan put on the device runs dense */
            memset(c->ffn.mask, 1, (size_t)(n * j.ff));
            r = hr_hybrid_ffn_dense(c, il, xn, n, out, e);
        } else r = ffn_threshold(&j, out, e); /* builds the mask count_fired reads */
        if (!r && fired) r = count_fired(&j, il, mode, e);
        break;
    default:
        if (fired && count_fired(&j, il, mode, e)) return -1;
        if (d->split) {
            memset(c->ffn.mask, 1, (size_t)(n * j.ff));
            r = hr_hybrid_ffn_split(c, L, il, xn, d->in.xn_on_dev, n, out, e);
        } else if (d->whole) r = hr_hybrid_ffn_dense(c, il, xn, n, out, e);
        else r = ffn_dense(&j, out, e);
        /* calibration hook: c->ffn.a still holds the dense activations [n][n_ff] */
        if (!r && c->ffn.observer) c->ffn.observer(c->ffn.observer_ud, il, n, x, c->ffn.a);
    }
    if (!r) count_computed(&j, il, mode);
    return r;
}
