/* Linear predictors (Hearth's own form, docs/threshold.md): no training, only the
 * data-weighted truncated SVD of the deciding matrices and one recall shift per layer.
 * A dReLU neuron fires when both gate·x and up·x are positive, and PowerInfer's
 * fc2 relu(fc1 p) cannot form that AND per neuron below the gate's own size; a linear map
 * estimates both products, and the AND is taken on the estimates. Its ReLU-free scores
 * also need no (a, -a) unit pairs, so a rank-k map costs k, not 2k + 2, hidden rows.
 * Each estimate is judged against its own residual RMS (sigma): neurons the map
 * reproduces well need less slack than those it does not. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "pred_internal.h"

#define BATCH 256

typedef struct lin_fit {
    int64_t d, ff, m, k; /* rows of the stacked scores: w = m * ff */
    float *fc1, *fc2, *sigma, *bias;
    bool band;      /* threshold files: active iff the estimate is outside (lo, hi); m = 1 */
    float lo, hi;   /* the dead band of the gate product (hr_thr_band) */
} lin_fit;

typedef struct lin_quality {
    double recall, precision, pred_frac, true_frac;
} lin_quality;

static void lin_free(lin_fit *f) { free(f->fc1), free(f->fc2), free(f->sigma), free(f->bias); }

/* S [nb][w] = fc2 fc1 p for the nb inputs at ids (H [nb][k], Pb [nb][d] scratch). */
static int scores(hr_cpu *cpu, const lin_fit *f, const pred_data *D, const int32_t *ids, int64_t nb, float *Pb, float *H, float *S,
                  hr_err *e) {
    hr_pred_gather(D, ids, nb, Pb);
    return hr_pred_mm(cpu, f->fc1, f->d, f->k, Pb, nb, H, e) || hr_pred_mm(cpu, f->fc2, f->k, f->m * f->ff, H, nb, S, e) ? -1 : 0;
}

/* Neuron j's margin in units of its sigma (its decision: predicted iff >= the shift): the
 * smallest of its m blocks' s / sigma, or for a band how far the estimate lies outside it. */
static float margin(const lin_fit *f, const float *s, int64_t j) {
    if (f->band) {
        const float up = (s[j] - f->hi) / f->sigma[j], down = (f->lo - s[j]) / f->sigma[j];
        return up > down ? up : down;
    }
    float z = INFINITY;
    for (int64_t b = 0; b < f->m; b++) {
        const float v = s[b * f->ff + j] / f->sigma[b * f->ff + j];
        z = v < z ? v : z;
    }
    return z;
}

/* sigma: the RMS of each score row's residual against the exact product, on the start's
 * sample (already normalised); T [ns][w] holds the exact products. */
static int fit_sigma(hr_cpu *cpu, lin_fit *f, const pred_start *St, const float *T, hr_err *e) {
    const int64_t ns = St->n, w = f->m * f->ff;
    float *H = malloc(sizeof(float) * (size_t)(ns * f->k)), *S = malloc(sizeof(float) * (size_t)(ns * w));
    int rc = !H || !S ? hr_errf(e, "out of memory fitting the predictor") : 0;
    if (!rc) rc = hr_pred_mm(cpu, f->fc1, f->d, f->k, St->Ps, ns, H, e) || hr_pred_mm(cpu, f->fc2, f->k, w, H, ns, S, e) ? -1 : 0;
    for (int64_t j = 0; !rc && j < w; j++) {
        double ss = 0;
        for (int64_t t = 0; t < ns; t++) {
            const double r = (double)T[t * w + j] - S[t * w + j];
            ss += r * r;
        }
        f->sigma[j] = (float)sqrt(ss / (double)(ns ? ns : 1)) + 1e-12f;
    }
    free(H), free(S);
    return rc;
}

/* The shift q that keeps the target share of the calibration pairs' firing neurons, as
 * biases -q sigma (a neuron is predicted iff every s + bias >= 0), or for a band the
 * biases of its two tests, s - hi - q sigma >= 0 or -s + lo - q sigma >= 0 (either). */
static int fit_shift(hr_cpu *cpu, lin_fit *f, const pred_data *D, double target, float *Pb, float *H, float *S, hr_err *e) {
    const int32_t *ids = D->idx + D->n_train;
    int64_t npos = 0;
    float *v = malloc(sizeof(float) * (size_t)(D->n_calib * f->ff + 1));
    if (!v) return hr_errf(e, "out of memory fitting the predictor");
    for (int64_t b = 0; b < D->n_calib; b += BATCH) {
        const int64_t nb = D->n_calib - b < BATCH ? D->n_calib - b : BATCH;
        if (scores(cpu, f, D, ids + b, nb, Pb, H, S, e)) return free(v), -1;
        for (int64_t t = 0; t < nb; t++)
            for (int64_t j = 0; j < f->ff; j++)
                if (hr_pair_bit(D->masks + (size_t)ids[b + t] * D->mb, j)) v[npos++] = margin(f, S + t * f->m * f->ff, j);
    }
    float q = 0;
    if (npos) {
        qsort(v, (size_t)npos, sizeof(float), hr_pred_cmp_f);
        int64_t k = (int64_t)floor((1.0 - target) * (double)npos);
        q = v[k < npos ? k : npos - 1];
        q -= 1e-4f * (1.0f + fabsf(q));
    }
    free(v);
    for (int64_t j = 0; !f->band && j < f->m * f->ff; j++) f->bias[j] = -q * f->sigma[j];
    for (int64_t j = 0; f->band && j < f->ff; j++) {
        f->bias[j] = -f->hi - q * f->sigma[j];
        f->bias[f->ff + j] = isfinite(f->lo) ? f->lo - q * f->sigma[j] : -FLT_MAX; /* no lower side */
    }
    return 0;
}

/* The rule the engine runs (ffn.c), on normalised scores: every block passes, or for a
 * band either side does. */
static bool predicted(const lin_fit *f, const float *s, int64_t j) {
    if (f->band) return s[j] + f->bias[j] >= 0.0f || -s[j] + f->bias[f->ff + j] >= 0.0f;
    bool on = true;
    for (int64_t k = 0; k < f->m; k++) on = on && s[k * f->ff + j] + f->bias[k * f->ff + j] >= 0.0f;
    return on;
}

static int evaluate(hr_cpu *cpu, const lin_fit *f, const pred_data *D, const int32_t *ids, int64_t n, float *Pb, float *H, float *S,
                    lin_quality *q, hr_err *e) {
    uint64_t tp = 0, fn = 0, fp = 0;
    const int64_t w = f->m * f->ff;
    for (int64_t b = 0; b < n; b += BATCH) {
        const int64_t nb = n - b < BATCH ? n - b : BATCH;
        if (scores(cpu, f, D, ids + b, nb, Pb, H, S, e)) return -1;
        for (int64_t t = 0; t < nb; t++)
            for (int64_t j = 0; j < f->ff; j++) {
                const bool on = predicted(f, S + t * w, j);
                const bool y = hr_pair_bit(D->masks + (size_t)ids[b + t] * D->mb, j);
                tp += y && on, fn += y && !on, fp += !y && on;
            }
    }
    const double cells = (double)n * (double)f->ff;
    q->recall = tp + fn ? (double)tp / (double)(tp + fn) : 1.0;
    q->precision = tp + fp ? (double)tp / (double)(tp + fp) : 1.0;
    q->pred_frac = cells > 0 ? (double)(tp + fp) / cells : 0;
    q->true_frac = cells > 0 ? (double)(tp + fn) / cells : 0;
    return 0;
}

/* Rank k's map, sigma and shift; its quality on the calibration (qc) and test (qt) pairs. */
static int fit_rank(hr_cpu *cpu, lin_fit *f, const pred_data *D, const pred_start *St, const float *T, const hr_pred_opts *o,
                    uint64_t *rng, lin_quality *qc, lin_quality *qt, hr_err *e) {
    const int64_t d = f->d, w = f->m * f->ff, k = f->k;
    float *Qt = malloc(sizeof(float) * (size_t)(k * w));
    float *Pb = malloc(sizeof(float) * (size_t)(BATCH * d)), *H = malloc(sizeof(float) * (size_t)(BATCH * k));
    float *S = malloc(sizeof(float) * (size_t)(BATCH * w));
    int rc = !Qt || !Pb || !H || !S ? hr_errf(e, "out of memory fitting the predictor") : hr_pred_top_subspace(cpu, St, d, w, k, rng, Qt, e);
    if (!rc) rc = hr_pred_mm(cpu, St->Gt, w, d, Qt, k, f->fc1, e); /* fc1 = Q^T Dec */
    if (!rc) hr_pred_transpose(Qt, k, w, f->fc2);                /* fc2 = Q */
    if (!rc && o->f16) hr_pred_round_f16(f->fc1, k * d), hr_pred_round_f16(f->fc2, w * k);
    if (!rc) rc = fit_sigma(cpu, f, St, T, e);
    const double target = o->recall + 0.25 * (1.0 - o->recall); /* margin: the shift is set on other pairs than the test */
    if (!rc) rc = fit_shift(cpu, f, D, target, Pb, H, S, e);
    if (!rc) rc = evaluate(cpu, f, D, D->idx + D->n_train, D->n_calib, Pb, H, S, qc, e);
    if (!rc) rc = evaluate(cpu, f, D, D->idx + D->n_train + D->n_calib, D->n_test, Pb, H, S, qt, e);
    free(Qt), free(Pb), free(H), free(S);
    return rc;
}

/* Ranks lo.. hi in steps of about 1.25x, multiples of 16 where above 16, hi last. */
static int rank_list(int64_t lo, int64_t hi, int64_t *ranks, int cap) {
    int n = 0;
    for (double r = (double)lo; n < cap; r *= 1.25) {
        int64_t k = (int64_t)r;
        if (k > 16) k = (k + 8) / 16 * 16;
        if (k >= hi) {
            if (!n || ranks[n - 1] < hi) ranks[n++] = hi;
            break;
        }
        if (!n || k > ranks[n - 1]) ranks[n++] = k;
    }
    return n;
}

static double lin_bytes(int64_t k, int64_t d, int64_t w, int64_t nbias, bool f16) {
    return (double)k * (double)(d + w) * (f16 ? 2 : 4) + 4.0 * (double)nbias;
}

/* P normalised to unit RMS per pair (the FFN norm's scale; its weight is in Dec). */
static float *normalised(const float *P, int64_t n, int64_t d, float eps) {
    float *Q = malloc(sizeof(float) * (size_t)(n * d) + 1);
    for (int64_t t = 0; Q && t < n; t++) {
        double ss = 0;
        for (int64_t i = 0; i < d; i++) ss += (double)P[t * d + i] * P[t * d + i];
        const float s = (float)(1.0 / sqrt(ss / (double)d + (double)eps));
        for (int64_t i = 0; i < d; i++) Q[t * d + i] = P[t * d + i] * s;
    }
    return Q;
}

typedef struct lin_best {
    lin_fit f;
    lin_quality qt;
    double cost, prec;
    bool ok; /* reached min_precision */
} lin_best;

/* Whether candidate (cost, calibration precision) beats the best so far. */
static bool better(const lin_best *b, bool have, double cost, double prec, bool ok) {
    if (!have) return true;
    if (ok != b->ok) return ok;
    return ok ? cost < b->cost : prec > b->prec;
}

int hr_predictor_fit_linear(hr_cpu *cpu, const float *P, const uint8_t *masks, int64_t n, int32_t n_embd, int32_t n_ff,
                            const float *Dec, int32_t m, const hr_pred_opts *o, hr_predictor *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (n < 10) return hr_errf(e, "%lld calibration pairs are too few to fit a predictor (need 10)", (long long)n);
    if (n > INT32_MAX) return hr_errf(e, "too many calibration pairs");
    if (!(o->recall > 0 && o->recall <= 1)) return hr_errf(e, "recall target %g is not in (0, 1]", o->recall);
    if (m < 1 || m > 2) return hr_errf(e, "a linear predictor has 1 or 2 score blocks, not %d", m);
    if (o->band && (m != 1 || !(o->band_lo <= o->band_hi)))
        return hr_errf(e, "a band predictor has one score block and lo <= hi (got %d, %g, %g)", m, (double)o->band_lo, (double)o->band_hi);
    const int64_t d = n_embd, ff = n_ff, w = (int64_t)m * ff, nbias = o->band ? 2 * ff : w;
    const int64_t hi = o->max_rank > 0 && o->max_rank < d ? o->max_rank : d, lo0 = o->min_rank > 0 ? o->min_rank : 16;
    const int64_t lo = lo0 < hi ? lo0 : hi;
    float *Pn = normalised(P, n, d, o->rms_eps);
    if (!Pn) return hr_errf(e, "out of memory for %lld calibration pairs", (long long)n);
    pred_data D = {Pn, masks, ((size_t)ff + 7) / 8, d, ff, NULL, 0, 0, 0};
    uint64_t rng = o->seed ? o->seed : 0x5eed;
    pred_start St;
    float *T = NULL;
    int rc = hr_pred_split(&D, n, &rng, e);
    pred_data Dw = D;
    Dw.ff = w; /* the start's operator is over the stacked score rows */
    if (!rc) rc = hr_pred_start_init(cpu, &St, &Dw, Dec, e);
    else St = (pred_start){0};
    if (!rc) { /* the exact stacked products of the start's sample, for sigma */
        T = malloc(sizeof(float) * (size_t)(St.n * w));
        rc = T ? hr_pred_mm(cpu, Dec, d, w, St.Ps, St.n, T, e) : hr_errf(e, "out of memory");
    }
    int64_t ranks[64];
    const int nr = rank_list(lo, hi, ranks, 64);
    lin_best best = {0};
    bool have = false;
    for (int ri = 0; ri < nr && !rc; ri++) {
        const int64_t k = ranks[ri];
        const double own = lin_bytes(k, d, w, nbias, o->f16);
        if (have && best.ok && own >= best.cost) break; /* its own bytes alone lose, and those of wider ranks */
        lin_fit f = {d, ff, m, k, malloc(sizeof(float) * (size_t)(k * d)), malloc(sizeof(float) * (size_t)(w * k)),
                     malloc(sizeof(float) * (size_t)w), malloc(sizeof(float) * (size_t)nbias), o->band, o->band_lo, o->band_hi};
        lin_quality qc = {0}, qt = {0};
        rc = !f.fc1 || !f.fc2 || !f.sigma || !f.bias ? hr_errf(e, "out of memory fitting the predictor") : 0;
        if (!rc) rc = fit_rank(cpu, &f, &D, &St, T, o, &rng, &qc, &qt, e);
        const double cost = own + qc.pred_frac * (double)ff * o->ffn_neuron_bytes;
        const bool ok = qc.precision >= o->min_precision;
        if (!rc && better(&best, have, cost, qc.precision, ok)) {
            if (have) lin_free(&best.f);
            best = (lin_best){f, qt, cost, qc.precision, ok}, have = true;
        } else {
            lin_free(&f);
        }
        if (o->progress) o->progress(o->progress_ud, "fitting", (double)(ri + 1) / nr);
    }
    if (!rc && have) {
        free(best.f.sigma);
        *out = (hr_predictor){n_embd, n_ff, (int32_t)best.f.k, best.f.fc1, best.f.fc2, (float)best.qt.recall, (float)best.qt.precision,
                              (float)best.qt.pred_frac, (float)best.qt.true_frac, m, best.f.bias, o->band};
    } else if (have) {
        lin_free(&best.f);
    }
    hr_pred_start_free(&St);
    free(D.idx), free(Pn), free(T);
    return rc;
}
