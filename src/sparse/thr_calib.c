/* Thresholds for FFN mode threshold (CATS): run the model densely over a text, histogram
 * |act(gate·x)| per layer through the FFN observer, and per layer take the magnitude under
 * which the target share of neurons falls. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"
#include "engine/ffn.h"
#include "engine/model.h"
#include "thr_internal.h"

/* Log-spaced bins: bin 0 holds magnitudes below 2^MIN_LOG2 (exact zeros among them), bin b
 * >= 1 holds [2^(MIN_LOG2 + (b-1)/PER_OCT), 2^(MIN_LOG2 + b/PER_OCT)); the last bin is open. */
#define PER_OCT 128
#define MIN_LOG2 (-40)
#define MAX_LOG2 24
#define N_BINS (1 + (MAX_LOG2 - MIN_LOG2) * PER_OCT)

typedef struct {
    hr_thr_gate g;
    uint64_t *hist;        /* [n_layer][N_BINS] */
} thr_collector;

static int bin_of(float v) {
    if (!(v >= ldexpf(1.0f, MIN_LOG2))) return 0;
    int b = 1 + (int)floorf((log2f(v) - (float)MIN_LOG2) * PER_OCT);
    return b < 1 ? 1 : b >= N_BINS ? N_BINS - 1 : b;
}

static void observe(void *ud, int32_t il, int32_t n_tok, const float *p, const float *act) {
    (void)p, (void)act;
    thr_collector *c = ud;
    const int64_t n = (int64_t)n_tok * c->g.m->hp.n_ff;
    const float *mag = hr_thr_gate_mag(&c->g, n_tok);
    uint64_t *h = c->hist + (size_t)il * N_BINS;
    for (int64_t i = 0; i < n; i++) h[bin_of(mag[i])]++;
}

/* The magnitude with a share `target` of the histogram's mass at or below it. */
float hr_thr_pick(const uint64_t *h, double target) {
    uint64_t total = 0;
    for (int b = 0; b < N_BINS; b++) total += h[b];
    const double want = target * (double)total;
    if (target <= 0 || total == 0) return 0.0f;
    double cum = 0;
    for (int b = 0; b < N_BINS; b++) {
        if (cum + (double)h[b] < want) {
            cum += (double)h[b];
            continue;
        }
        if (b == 0) return ldexpf(1.0f, MIN_LOG2);
        double lo = MIN_LOG2 + (double)(b - 1) / PER_OCT, frac = h[b] ? (want - cum) / (double)h[b] : 0;
        return (float)exp2(lo + frac / PER_OCT);
    }
    return ldexpf(1.0f, MAX_LOG2);
}

const float *hr_thr_gate_mag(hr_thr_gate *g, int32_t n_tok) {
    hr_ffn_gate_mag(g->mag, hr_ffn_last_gate(g->ctx), (int64_t)n_tok * g->m->hp.n_ff, g->m->hp.act, g->m->gelu_tab);
    return g->mag;
}

int hr_thr_run_dense(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, hr_thr_gate *g,
                     void (*fn)(void *ud, int32_t il, int32_t n_tok, const float *p, const float *act), void *ud,
                     const char *what, uint64_t *n_evaluated, hr_err *e) {
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = o->n_ctx, cp.n_batch = o->n_ctx, cp.n_threads = o->n_threads;
    cp.ffn_mode = HEARTH_FFN_DENSE, cp.gpu = HEARTH_GPU_OFF; /* the observer reads the CPU's gate */
    cp.kv_k = cp.kv_v = HEARTH_KV_F32;
    cp.ffn_observer = fn, cp.ffn_observer_ud = ud;
    hearth_ctx *ctx = hearth_ctx_new(m, &cp, e);
    if (!ctx) return -1;
    g->m = m, g->ctx = ctx;
    g->mag = malloc(sizeof(float) * (size_t)hearth_ctx_n_ctx(ctx) * (size_t)m->hp.n_ff);
    int r = g->mag ? hr_calib_eval_chunks(ctx, tokens, n_tokens, o, what, n_evaluated, e) : hr_errf(e, "out of memory");
    free(g->mag);
    g->mag = NULL, g->ctx = NULL;
    hearth_ctx_free(ctx);
    return r;
}

size_t hr_thr_n_bins(void) { return N_BINS; }

int hr_thr_histograms(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, double target,
                      uint64_t **hist, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    *hist = NULL;
    if (!(target >= 0 && target < 1)) return hr_errf(e, "target sparsity %g is outside [0, 1)", target);
    if (hp->n_expert) return hr_errf(e, "thresholds for mixture-of-experts models are not supported (%d experts)", hp->n_expert);
    if (!hp->has_gate)
        return hr_errf(e, "thresholds need a gated FFN (swiglu, geglu, reglu, drelu); this model's is %s", hr_act_name(hp->act));
    if (n_tokens < 1) return hr_errf(e, "no tokens to calibrate on");
    thr_collector col = {.hist = calloc((size_t)hp->n_layer * N_BINS, sizeof(uint64_t))};
    int r = col.hist ? hr_thr_run_dense(m, tokens, n_tokens, o, &col.g, observe, &col, "measuring", NULL, e)
                     : hr_errf(e, "out of memory");
    if (r) free(col.hist);
    else *hist = col.hist;
    return r;
}

int hr_calib_thresholds(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, double target,
                        float *thr, hr_err *e) {
    uint64_t *hist;
    if (hr_thr_histograms(m, tokens, n_tokens, o, target, &hist, e)) return -1;
    for (int32_t il = 0; il < m->hp.n_layer; il++) thr[il] = hr_thr_pick(hist + (size_t)il * N_BINS, target);
    free(hist);
    return 0;
}
