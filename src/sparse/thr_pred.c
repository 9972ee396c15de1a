/* Predictors for threshold files: the (p, active set) pairs of a dense run where neuron j of
 * layer l counts as active on a token iff |act(gate·x)| > thr[l] (what FFN mode threshold
 * computes), plus how often each neuron is active (the statistics file `hearth place`
 * reads). The pairs train the same predictors as ReLU files (predictor_train.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"
#include "thr_internal.h"
#include "engine/ffn.h"
#include "engine/model.h"

typedef struct {
    hr_thr_gate g;
    const float *thr;
    hr_stats *stats;
    hr_pairs *pairs;
    int64_t *seen; /* [n_layer] tokens already observed in each layer */
    int64_t stride; /* keep the pair of every stride-th token */
} thr_collector;

static void observe(void *ud, int32_t il, int32_t n_tok, const float *p, const float *act) {
    (void)act;
    thr_collector *c = ud;
    const int64_t ff = c->pairs->n_ff;
    const float *mag = hr_thr_gate_mag(&c->g, n_tok);
    hr_pairs_record(c->pairs, c->stats->counts + (size_t)il * (size_t)ff, c->seen, c->stride, il, n_tok, p, mag, &c->thr[il]);
}

int hr_calib_collect_thr(hearth_model *m, const int32_t *tokens, int64_t n_tokens, const hr_collect_opts *o, const float *thr,
                         hr_stats *stats, hr_pairs *pairs, hr_err *e) {
    const hr_hparams *hp = &m->hp;
    memset(stats, 0, sizeof *stats);
    memset(pairs, 0, sizeof *pairs);
    if (hp->n_expert) return hr_errf(e, "threshold predictors for mixture-of-experts models are not supported (%d experts)", hp->n_expert);
    if (!hp->has_gate)
        return hr_errf(e, "threshold predictors need a gated FFN (swiglu, geglu, reglu, drelu); this model's is %s", hr_act_name(hp->act));
    if (n_tokens < 1) return hr_errf(e, "no tokens to calibrate on");
    if (o->max_pairs < 1) return hr_errf(e, "at least one calibration pair is needed (--tokens)");
    for (int32_t il = 0; il < hp->n_layer; il++)
        if (!(thr[il] >= 0)) return hr_errf(e, "layer %d's threshold %g is not a number >= 0", il, (double)thr[il]);
    int64_t cap = o->max_pairs < n_tokens ? o->max_pairs : n_tokens;
    thr_collector col = {.thr = thr, .stats = stats, .pairs = pairs, .seen = calloc((size_t)hp->n_layer + 1, sizeof(int64_t)),
                         .stride = (n_tokens + cap - 1) / cap};
    int r = !col.seen ? hr_errf(e, "out of memory") : 0;
    if (!r) r = hr_stats_init(stats, hp->n_layer, hp->n_ff, e);
    if (!r) r = hr_pairs_init(pairs, hp->n_layer, hp->n_embd, hp->n_ff, cap, e);
    if (!r) r = hr_thr_run_dense(m, tokens, n_tokens, o, &col.g, observe, &col, "pairs", &stats->n_tokens, e);
    free(col.seen);
    if (r) {
        hr_stats_free(stats);
        hr_pairs_free(pairs);
    }
    return r;
}

double hr_calib_gate_row_bytes(const hearth_model *m) {
    const hr_ffn_weights *f = &m->layers[0].ffn;
    return f->gate.data ? (double)f->gate.row_bytes : 0.0;
}

static float mag_at(const hearth_model *m, float g) {
    float v;
    hr_ffn_gate_mag(&v, &g, 1, m->hp.act, m->gelu_tab);
    return v;
}

/* Bisection of the boundary between a (mag <= t) and b (mag > t). */
static float boundary(const hearth_model *m, float t, float a, float b) {
    for (int i = 0; i < 64 && a != b; i++) {
        const float c = 0.5f * (a + b);
        if (c == a || c == b) break;
        *(mag_at(m, c) > t ? &b : &a) = c;
    }
    return b;
}

int hr_thr_band(const hearth_model *m, float t, float *lo, float *hi, hr_err *e) {
    if (!(t >= 0) || !isfinite(t)) return hr_errf(e, "threshold %g is not a finite number >= 0", (double)t);
    float g = 1.0f;
    while (mag_at(m, g) <= t && g < 1e30f) g *= 2.0f;
    if (mag_at(m, g) <= t) return hr_errf(e, "no gate product reaches the threshold %g", (double)t);
    *hi = boundary(m, t, 0.0f, g);
    /* below 0 silu and gelu dip and return to 0: the side nearest 0 of where the dip
     * exceeds t, from a grid fine enough for their minima (-0.278 at -1.28, -0.17 at -0.75) */
    *lo = -INFINITY;
    for (int i = 1; i <= 16 * 1024; i++)
        if (mag_at(m, -(float)i / 1024.0f) > t) {
            *lo = boundary(m, t, 0.0f, -(float)i / 1024.0f);
            break;
        }
    return 0;
}
