/* Per-layer predictor training: weighted BCE (false negatives cost more) with Adam, the
 * products through the CPU matmul (threaded), a recall shift calibrated on held-out
 * pairs, and a rank search that minimises the bytes a token reads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "pred_internal.h"

#define BATCH 256
/* Weight of a firing neuron in the BCE. From the SVD start (calibration always has the gate)
 * the scores already rank the neurons, and the recall target (99%) is set by the lowest-
 * scoring positives, which a heavy weight pushes up: on the bundled model's layer 1 at rank 128,
 * precision at the target was 18.0% (weight 4), 23.9% (16), 25.4% (64). From a random start
 * a heavy weight stalls the learning of directions (synthetic test: 0.96, 0.90, 0.75), so
 * that start keeps 4. */
#define POS_WEIGHT_SVD 64.0f
#define POS_WEIGHT_RANDOM 4.0f
#define LR_REL 0.02      /* Adam step relative to the RMS of the initial weights */
#define DEFAULT_EPOCHS 6
#define MIN_PAIRS 10

typedef struct train_ws {
    float *Pb, *Pbt, *H, *Ht, *S, *GSt, *fc2t, *GH, *GHt, *g1, *g2, *m1, *v1, *m2, *v2;
    uint16_t *h1, *h2; /* F16 copies for measuring stored-as-F16 predictors */
} train_ws;

static int mm(hr_cpu *cpu, uint32_t type, const void *W, int64_t n_in, int64_t n_out, const float *X, int64_t n_tok, float *Y, hr_err *e) {
    hr_mat m = {.type = type, .n_in = n_in, .n_out = n_out, .row_bytes = (size_t)hr_row_bytes(type, (uint64_t)n_in), .data = W};
    return hr_matmul(cpu, &m, X, n_tok, Y, e);
}

static void ws_free(train_ws *w) {
    float **f[] = {&w->Pb, &w->Pbt, &w->H, &w->Ht, &w->S, &w->GSt, &w->fc2t, &w->GH, &w->GHt, &w->g1, &w->g2, &w->m1, &w->v1, &w->m2, &w->v2};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) free(*f[i]), *f[i] = NULL;
    free(w->h1), free(w->h2);
    w->h1 = w->h2 = NULL;
}

static int ws_alloc(train_ws *w, int64_t d, int64_t ff, int64_t r, hr_err *e) {
    memset(w, 0, sizeof *w);
    const size_t B = BATCH;
    size_t sz[] = {B * d, B * d, B * r, B * r, B * ff, B * ff, r * ff, B * r, B * r, r * d, ff * r, r * d, r * d, ff * r, ff * r};
    float **f[] = {&w->Pb, &w->Pbt, &w->H, &w->Ht, &w->S, &w->GSt, &w->fc2t, &w->GH, &w->GHt, &w->g1, &w->g2, &w->m1, &w->v1, &w->m2, &w->v2};
    int bad = 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) bad |= !(*f[i] = calloc(sz[i], sizeof(float)));
    w->h1 = malloc(sizeof(uint16_t) * (size_t)(r * d)), w->h2 = malloc(sizeof(uint16_t) * (size_t)(ff * r));
    if (bad || !w->h1 || !w->h2) {
        ws_free(w);
        return hr_errf(e, "out of memory for predictor training (rank %lld)", (long long)r);
    }
    return 0;
}

static bool bit(const pred_data *D, int32_t id, int64_t j) { return hr_pair_bit(D->masks + (size_t)id * D->mb, j); }

/* H = relu(fc1 P), S = fc2 H for nb pairs, with the weights as stored (F32 or F16). */
static int forward(hr_cpu *cpu, const pred_net *N, train_ws *w, bool f16, const pred_data *D, const int32_t *ids, int64_t nb, hr_err *e) {
    hr_pred_gather(D, ids, nb, w->Pb);
    uint32_t t = f16 ? HR_F16 : HR_F32;
    const void *W1 = N->fc1, *W2 = N->fc2;
    if (f16) {
        for (int64_t i = 0; i < N->r * N->d; i++) w->h1[i] = hr_f32_to_f16(N->fc1[i]);
        for (int64_t i = 0; i < N->ff * N->r; i++) w->h2[i] = hr_f32_to_f16(N->fc2[i]);
        W1 = w->h1, W2 = w->h2;
    }
    if (mm(cpu, t, W1, N->d, N->r, w->Pb, nb, w->H, e)) return -1;
    for (int64_t i = 0; i < nb * N->r; i++) w->H[i] = w->H[i] > 0 ? w->H[i] : 0.0f;
    return mm(cpu, t, W2, N->r, N->ff, w->H, nb, w->S, e);
}

static void adam(float *p, const float *g, float *m, float *v, int64_t n, double lr, int64_t step) {
    const double b1 = 0.9, b2 = 0.999, c1 = 1 - pow(b1, (double)step), c2 = 1 - pow(b2, (double)step);
    for (int64_t i = 0; i < n; i++) {
        m[i] = (float)(b1 * m[i] + (1 - b1) * g[i]);
        v[i] = (float)(b2 * v[i] + (1 - b2) * (double)g[i] * g[i]);
        p[i] -= (float)(lr * (m[i] / c1) / (sqrt(v[i] / c2) + 1e-8));
    }
}

static double rms(const float *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return n ? sqrt(s / (double)n) : 0;
}

/* One Adam step on nb training pairs. */
static int train_step(hr_cpu *cpu, pred_net *N, train_ws *w, const pred_data *D, const int32_t *ids, int64_t nb,
                      float pos_w, double lr1, double lr2, int64_t step, hr_err *e) {
    const int64_t r = N->r, d = N->d, ff = N->ff;
    if (forward(cpu, N, w, false, D, ids, nb, e)) return -1;
    for (int64_t t = 0; t < nb; t++) /* dLoss/dscore of the weighted BCE */
        for (int64_t j = 0; j < ff; j++) {
            float *s = &w->S[t * ff + j];
            float sig = 1.0f / (1.0f + expf(-*s));
            *s = (bit(D, ids[t], j) ? pos_w * (sig - 1.0f) : sig) / (float)nb;
        }
    hr_pred_transpose(w->S, nb, ff, w->GSt), hr_pred_transpose(w->H, nb, r, w->Ht), hr_pred_transpose(N->fc2, ff, r, w->fc2t);
    if (mm(cpu, HR_F32, w->Ht, nb, r, w->GSt, ff, w->g2, e)) return -1;        /* g2 = GS^T H */
    if (mm(cpu, HR_F32, w->fc2t, ff, r, w->S, nb, w->GH, e)) return -1;        /* GH = GS fc2 */
    for (int64_t i = 0; i < nb * r; i++)
        if (w->H[i] <= 0) w->GH[i] = 0;
    hr_pred_transpose(w->GH, nb, r, w->GHt), hr_pred_transpose(w->Pb, nb, d, w->Pbt);
    if (mm(cpu, HR_F32, w->Pbt, nb, d, w->GHt, r, w->g1, e)) return -1;        /* g1 = GH^T P */
    memset(w->g1 + (r - 2) * d, 0, sizeof(float) * (size_t)(2 * d));          /* the bias pair stays fixed */
    adam(N->fc1, w->g1, w->m1, w->v1, r * d, lr1, step);
    adam(N->fc2, w->g2, w->m2, w->v2, ff * r, lr2, step);
    return 0;
}

static void shuffle(int32_t *a, int64_t n, uint64_t *rng) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(hr_pred_rand(rng) % (uint64_t)(i + 1));
        int32_t t = a[i];
        a[i] = a[j], a[j] = t;
    }
}

static int train(hr_cpu *cpu, pred_net *N, train_ws *w, const pred_data *D, int epochs, float pos_w, uint64_t *rng,
                 const hr_pred_opts *o, double f0, double f1, hr_err *e) {
    int32_t *order = malloc(sizeof(int32_t) * (size_t)D->n_train);
    if (!order) return hr_errf(e, "out of memory");
    memcpy(order, D->idx, sizeof(int32_t) * (size_t)D->n_train);
    double lr1 = LR_REL * rms(N->fc1, N->r * N->d), lr2 = LR_REL * rms(N->fc2, N->ff * N->r);
    if (lr2 <= 0) lr2 = LR_REL;
    int64_t per = (D->n_train + BATCH - 1) / BATCH, total = per * epochs, step = 0;
    for (int ep = 0; ep < epochs; ep++) {
        shuffle(order, D->n_train, rng);
        for (int64_t b = 0; b < D->n_train; b += BATCH) {
            int64_t nb = D->n_train - b < BATCH ? D->n_train - b : BATCH;
            double decay = 1.0 - (double)step / (double)total;
            if (train_step(cpu, N, w, D, order + b, nb, pos_w, lr1 * decay, lr2 * decay, ++step, e)) {
                free(order);
                return -1;
            }
        }
        if (o->progress) o->progress(o->progress_ud, "training", f0 + (f1 - f0) * (ep + 1) / epochs);
    }
    free(order);
    return 0;
}


/* Smallest shift delta (scores move by delta * |a.p|) that recovers the target share of
 * the calibration pairs' active neurons; folded into fc2's bias-pair columns. */
static int calibrate_shift(hr_cpu *cpu, pred_net *N, train_ws *w, const pred_data *D, double target, bool f16, hr_err *e) {
    const int64_t r = N->r, ff = N->ff;
    const int32_t *ids = D->idx + D->n_train;
    int64_t cap = D->n_calib * ff, npos = 0;
    float *v = malloc(sizeof(float) * (size_t)(cap ? cap : 1));
    if (!v) return hr_errf(e, "out of memory");
    for (int64_t b = 0; b < D->n_calib; b += BATCH) {
        int64_t nb = D->n_calib - b < BATCH ? D->n_calib - b : BATCH;
        if (forward(cpu, N, w, f16, D, ids + b, nb, e)) {
            free(v);
            return -1;
        }
        for (int64_t t = 0; t < nb; t++) {
            float u = w->H[t * r + r - 2] + w->H[t * r + r - 1];
            for (int64_t j = 0; j < ff; j++) {
                if (!bit(D, ids[b + t], j)) continue;
                float s = w->S[t * ff + j];
                v[npos++] = u > 0 ? -s / u : (s >= 0 ? -INFINITY : INFINITY);
            }
        }
    }
    if (npos) {
        qsort(v, (size_t)npos, sizeof(float), hr_pred_cmp_f);
        int64_t k = (int64_t)ceil(target * (double)npos) - 1;
        if (k < 0) k = 0;
        while (k > 0 && !isfinite(v[k])) k--; /* unreachable positives: do the best possible */
        float delta = isfinite(v[k]) ? v[k] : 0.0f;
        delta += 1e-4f * (1.0f + fabsf(delta));
        for (int64_t j = 0; j < ff; j++) N->fc2[j * r + r - 2] += delta, N->fc2[j * r + r - 1] += delta;
    }
    free(v);
    return 0;
}

typedef struct pred_quality {
    double recall, precision, pred_frac, true_frac;
} pred_quality;

static int evaluate(hr_cpu *cpu, const pred_net *N, train_ws *w, const pred_data *D, const int32_t *ids, int64_t n, bool f16,
                    pred_quality *q, hr_err *e) {
    const int64_t ff = N->ff;
    uint64_t tp = 0, fn = 0, fp = 0;
    for (int64_t b = 0; b < n; b += BATCH) {
        int64_t nb = n - b < BATCH ? n - b : BATCH;
        if (forward(cpu, N, w, f16, D, ids + b, nb, e)) return -1;
        for (int64_t t = 0; t < nb; t++)
            for (int64_t j = 0; j < ff; j++) {
                bool y = bit(D, ids[b + t], j), p = w->S[t * ff + j] >= 0.0f;
                tp += y && p, fn += y && !p, fp += !y && p;
            }
    }
    double cells = (double)n * (double)ff;
    q->recall = tp + fn ? (double)tp / (double)(tp + fn) : 1.0;
    q->precision = tp + fp ? (double)tp / (double)(tp + fp) : 1.0;
    q->pred_frac = cells > 0 ? (double)(tp + fp) / cells : 0;
    q->true_frac = cells > 0 ? (double)(tp + fn) / cells : 0;
    return 0;
}


/* Rounds (when stored as F16) and shifts N for the recall target; its share of predicted
 * neurons on the calibration pairs into *frac. */
static int finish(hr_cpu *cpu, pred_net *N, train_ws *w, const pred_data *D, const hr_pred_opts *o, double *frac, hr_err *e) {
    double target = o->recall + 0.25 * (1.0 - o->recall); /* margin: the shift is set on other pairs than the test */
    if (o->f16) hr_pred_round_f16(N->fc1, N->r * N->d), hr_pred_round_f16(N->fc2, N->ff * N->r);
    if (calibrate_shift(cpu, N, w, D, target, o->f16, e)) return -1;
    if (o->f16) hr_pred_round_f16(N->fc2, N->ff * N->r);
    pred_quality q;
    if (evaluate(cpu, N, w, D, D->idx + D->n_train, D->n_calib, o->f16, &q, e)) return -1;
    *frac = q.pred_frac;
    return 0;
}

/* Trains and calibrates a predictor of width r; fills q with its test-pair quality.
 * Training can lose to its starting point (a near-exact SVD at high rank), so the one
 * that predicts fewer neurons at the target recall on the calibration pairs is kept. */
static int fit_rank(hr_cpu *cpu, pred_net *N, const pred_data *D, const pred_start *St, const hr_pred_opts *o, uint64_t *rng,
                    double f0, double f1, pred_quality *q, hr_err *e) {
    train_ws w;
    if (ws_alloc(&w, N->d, N->ff, N->r, e)) return -1;
    int epochs = o->epochs > 0 ? o->epochs : DEFAULT_EPOCHS;
    const size_t b1 = sizeof(float) * (size_t)(N->r * N->d), b2 = sizeof(float) * (size_t)(N->ff * N->r);
    pred_net S = {N->r, N->d, N->ff, malloc(b1), malloc(b2)};
    double frac_init = 2, frac_trained = 2;
    int rc = !S.fc1 || !S.fc2 ? hr_errf(e, "out of memory initialising the predictor") : hr_pred_init(cpu, N, D, St, rng, e);
    if (!rc) memcpy(S.fc1, N->fc1, b1), memcpy(S.fc2, N->fc2, b2);
    if (!rc) rc = train(cpu, N, &w, D, epochs, St->G ? POS_WEIGHT_SVD : POS_WEIGHT_RANDOM, rng, o, f0, f1, e);
    if (!rc) rc = finish(cpu, N, &w, D, o, &frac_trained, e);
    if (!rc) rc = finish(cpu, &S, &w, D, o, &frac_init, e);
    if (!rc && frac_init < frac_trained) memcpy(N->fc1, S.fc1, b1), memcpy(N->fc2, S.fc2, b2);
    if (!rc) rc = evaluate(cpu, N, &w, D, D->idx + D->n_train + D->n_calib, D->n_test, o->f16, q, e);
    free(S.fc1), free(S.fc2);
    ws_free(&w);
    return rc;
}

int hr_pred_split(pred_data *D, int64_t n, uint64_t *rng, hr_err *e) {
    D->idx = malloc(sizeof(int32_t) * (size_t)n);
    if (!D->idx) return hr_errf(e, "out of memory");
    for (int64_t i = 0; i < n; i++) D->idx[i] = (int32_t)i;
    shuffle(D->idx, n, rng);
    D->n_test = n / 10, D->n_calib = n / 10;
    D->n_train = n - D->n_test - D->n_calib;
    return 0;
}

/* What a predictor of width r reads per token: the part of the rank search's cost known
 * before training. */
static double pred_bytes(int64_t r, int32_t n_embd, int32_t n_ff, bool f16) { return (double)r * (n_embd + n_ff) * (f16 ? 2 : 4); }

static int64_t rank_cap(int64_t d, int64_t ff) { return 2 * (d < ff ? d : ff) + 2; }

int hr_predictor_train(hr_cpu *cpu, const float *P, const uint8_t *masks, int64_t n, int32_t n_embd, int32_t n_ff,
                       const float *G, const hr_pred_opts *o, hr_predictor *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (n < MIN_PAIRS) return hr_errf(e, "%lld calibration pairs are too few to train a predictor (need %d)", (long long)n, MIN_PAIRS);
    if (n > INT32_MAX) return hr_errf(e, "too many calibration pairs");
    if (!(o->recall > 0 && o->recall <= 1)) return hr_errf(e, "recall target %g is not in (0, 1]", o->recall);
    int64_t lo = o->min_rank > 0 ? o->min_rank : 16, hi = o->max_rank, cap = rank_cap(n_embd, n_ff);
    if (hi < 4) return hr_errf(e, "max rank %lld is below 4 (two units for the linear part, two for the shift)", (long long)hi);
    if (hi > cap) hi = cap;
    if (lo > hi) lo = hi;
    pred_data D = {P, masks, ((size_t)n_ff + 7) / 8, n_embd, n_ff, NULL, 0, 0, 0};
    uint64_t rng = o->seed ? o->seed : 0x5eed;
    if (hr_pred_split(&D, n, &rng, e)) return -1;
    pred_start St;
    if (hr_pred_start_init(cpu, &St, &D, G, e)) return free(D.idx), -1;
    int64_t ranks[32];
    int n_ranks = 0;
    for (int64_t r = lo; n_ranks < 32; r *= 2) {
        if (r >= hi) { /* the last step: hi, unless it is barely above the previous rank */
            if (!n_ranks || hi > ranks[n_ranks - 1] * 5 / 4) ranks[n_ranks++] = hi;
            break;
        }
        ranks[n_ranks++] = r;
    }
    double best_cost = INFINITY;
    int worse = 0, rc = 0;
    for (int ri = 0; ri < n_ranks && !rc && worse < 2; ri++) {
        int64_t r = ranks[ri];
        if (pred_bytes(r, n_embd, n_ff, o->f16) >= best_cost) break; /* its own bytes alone lose, and those of wider ranks */
        pred_net N = {r, n_embd, n_ff, malloc(sizeof(float) * (size_t)(r * n_embd)), malloc(sizeof(float) * (size_t)(r * n_ff))};
        pred_quality q = {0};
        rc = !N.fc1 || !N.fc2 ? hr_errf(e, "out of memory") : 0;
        if (!rc) rc = fit_rank(cpu, &N, &D, &St, o, &rng, (double)ri / n_ranks, (double)(ri + 1) / n_ranks, &q, e);
        double cost = pred_bytes(r, n_embd, n_ff, o->f16) + q.pred_frac * n_ff * o->ffn_neuron_bytes;
        if (!rc && cost < best_cost) {
            free(out->fc1), free(out->fc2);
            *out = (hr_predictor){n_embd, n_ff, (int32_t)r, N.fc1, N.fc2, (float)q.recall, (float)q.precision, (float)q.pred_frac, (float)q.true_frac, 0, NULL, false};
            best_cost = cost, worse = 0;
        } else {
            free(N.fc1), free(N.fc2);
            worse++;
        }
    }
    hr_pred_start_free(&St);
    free(D.idx);
    if (rc) hr_predictor_free(out);
    if (!rc && o->progress) o->progress(o->progress_ud, "training", 1.0);
    return rc;
}

int hr_predictor_eval(hr_cpu *cpu, const hr_predictor *pr, const float *P, const uint8_t *masks, int64_t n,
                      double *recall, double *precision, double *pred_frac, hr_err *e) {
    pred_net N = {pr->r, pr->n_embd, pr->n_ff, pr->fc1, pr->fc2};
    pred_data D = {P, masks, ((size_t)pr->n_ff + 7) / 8, pr->n_embd, pr->n_ff, malloc(sizeof(int32_t) * (size_t)(n ? n : 1)), 0, 0, n};
    train_ws w;
    if (!D.idx) return hr_errf(e, "out of memory");
    for (int64_t i = 0; i < n; i++) D.idx[i] = (int32_t)i;
    pred_quality q = {0};
    int rc = ws_alloc(&w, pr->n_embd, pr->n_ff, pr->r, e);
    if (!rc) rc = evaluate(cpu, &N, &w, &D, D.idx, n, false, &q, e), ws_free(&w);
    free(D.idx);
    if (!rc) *recall = q.recall, *precision = q.precision, *pred_frac = q.pred_frac;
    return rc;
}

void hr_predictor_free(hr_predictor *p) {
    if (!p) return;
    free(p->fc1), free(p->fc2), free(p->bias);
    memset(p, 0, sizeof *p);
}
