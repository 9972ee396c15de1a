/* The linear predictor form (predictor_linear.c) on hand-built dReLU layers whose active
 * sets are known: neuron j fires iff (G p)_j > 0 and (U p)_j > 0. Quality is measured on
 * fresh pairs with a naive evaluation of the rule the engine runs (ffn.c): every score
 * block s + bias * rms(p) >= 0. And the band form of threshold files on a SwiGLU layer:
 * j is active iff |silu(g_j)| > t, g = G p / rms(p) (what the FFN sees after its norm). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sparse/calibrate.h"
#include "testutil.h"

enum { D = 32, FF = 96, EPS_NONE = 0 };

typedef struct {
    int n;
    float *P;
    uint8_t *M;
} pairs;

static float *randm(hr_rng *r, int rows, int cols, float scale) {
    float *m = malloc(sizeof(float) * (size_t)rows * cols);
    for (int i = 0; i < rows * cols; i++) m[i] = hr_rng_normal(r) * scale;
    return m;
}

/* GU: [2 FF][D], gate rows then up rows; p = 0.3 + B z with a scale that varies per pair
 * (the rule must not depend on it). */
static pairs make(hr_rng *r, const float *GU, const float *B, int n) {
    const size_t mb = (FF + 7) / 8;
    pairs s = {n, malloc(sizeof(float) * (size_t)n * D), calloc((size_t)n * mb, 1)};
    for (int t = 0; t < n; t++) {
        float *p = s.P + (size_t)t * D, z[D];
        const float scale = 0.5f + 2.0f * (float)(t % 7) / 7.0f;
        for (int c = 0; c < D; c++) z[c] = hr_rng_normal(r);
        for (int i = 0; i < D; i++) {
            p[i] = 0.3f;
            for (int c = 0; c < D; c++) p[i] += B[c * D + i] * z[c];
            p[i] *= scale;
        }
        for (int j = 0; j < FF; j++) {
            double g = 0, u = 0;
            for (int i = 0; i < D; i++) g += (double)GU[j * D + i] * p[i], u += (double)GU[(FF + j) * D + i] * p[i];
            if (g > 0 && u > 0) s.M[(size_t)t * mb + j / 8] |= (uint8_t)(1u << (j % 8));
        }
    }
    return s;
}

/* h = fc1 p (double sums); returns rms(p) */
static double hidden(const hr_predictor *pr, const float *p, double *h) {
    double ss = 0;
    for (int i = 0; i < D; i++) ss += (double)p[i] * p[i];
    for (int c = 0; c < pr->r; c++) {
        h[c] = 0;
        for (int i = 0; i < D; i++) h[c] += (double)pr->fc1[c * D + i] * p[i];
    }
    return sqrt(ss / D);
}

static double score(const hr_predictor *pr, const double *h, int row) {
    double sc = 0;
    for (int c = 0; c < pr->r; c++) sc += (double)pr->fc2[row * pr->r + c] * h[c];
    return sc;
}

/* The engine's rule for neuron j (ffn.c): every block passes, or for a band either side. */
static bool predicted(const hr_predictor *pr, const double *h, double rms, int j) {
    if (pr->band) {
        const double sc = score(pr, h, j);
        return sc + pr->bias[j] * rms >= 0 || -sc + pr->bias[FF + j] * rms >= 0;
    }
    bool on = true;
    for (int b = 0; b < pr->m; b++) on = on && score(pr, h, b * FF + j) + pr->bias[b * FF + j] * rms >= 0;
    return on;
}

static void naive_quality(const hr_predictor *pr, const pairs *s, double *recall, double *precision) {
    long tp = 0, fn = 0, fp = 0;
    double *h = malloc(sizeof(double) * (size_t)pr->r);
    for (int t = 0; t < s->n; t++) {
        const double rms = hidden(pr, s->P + (size_t)t * D, h);
        for (int j = 0; j < FF; j++) {
            const bool on = predicted(pr, h, rms, j), y = hr_pair_bit(s->M + (size_t)t * ((FF + 7) / 8), j);
            tp += y && on, fn += y && !on, fp += !y && on;
        }
    }
    free(h);
    *recall = (double)tp / (double)(tp + fn);
    *precision = (double)tp / (double)(tp + fp);
}

static void full_rank(hr_cpu *cpu, const float *GU, const pairs *tr, const pairs *te) {
    hr_pred_opts o = {.recall = 0.99, .max_rank = D, .min_rank = D, .ffn_neuron_bytes = 1e6, .seed = 3, .rms_eps = EPS_NONE};
    hr_predictor and2, gate;
    hr_err e;
    double rec, prec, rg, pg;
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 2, &o, &and2, &e) == 0, "%s", e.msg);
    naive_quality(&and2, te, &rec, &prec);
    printf("gate and up, rank %d: fresh recall %.4f precision %.4f (held-out %.4f / %.4f)\n", and2.r, rec, prec, and2.recall,
           and2.precision);
    CHECK(and2.r == D && and2.m == 2 && and2.bias);
    CHECKF(rec >= 0.985 && prec >= 0.97, "recall %.4f precision %.4f", rec, prec);
    CHECKF(fabs(and2.recall - rec) < 0.01, "held-out recall %.4f, fresh %.4f", and2.recall, rec);
    /* the gate alone, same labels: a neuron whose gate passes fires only when its up does */
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 1, &o, &gate, &e) == 0, "%s", e.msg);
    naive_quality(&gate, te, &rg, &pg);
    printf("gate only, rank %d: fresh recall %.4f precision %.4f\n", gate.r, rg, pg);
    CHECK(gate.m == 1 && rg >= 0.985);
    CHECKF(prec >= pg + 0.3, "gate and up %.4f, gate only %.4f", prec, pg);
    hr_predictor_free(&and2), hr_predictor_free(&gate);
}

/* Below full rank the shift still buys the recall; min_precision picks a wider rank than
 * the byte-cheapest one. */
static void low_rank(hr_cpu *cpu, const float *GU, const pairs *tr, const pairs *te) {
    hr_pred_opts o = {.recall = 0.98, .max_rank = 12, .min_rank = 12, .ffn_neuron_bytes = 1e6, .seed = 3};
    hr_predictor pr;
    hr_err e;
    double rec, prec, rc2, pc2;
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 2, &o, &pr, &e) == 0, "%s", e.msg);
    naive_quality(&pr, te, &rec, &prec);
    printf("rank %d: fresh recall %.4f precision %.4f\n", pr.r, rec, prec);
    CHECKF(pr.r == 12 && rec >= 0.97 && prec > pr.true_frac, "r %d recall %.4f precision %.4f", pr.r, rec, prec);
    hr_predictor_free(&pr);
    o.min_rank = 4, o.max_rank = D, o.ffn_neuron_bytes = 0; /* bytes: the predictor's only, so the smallest rank is cheapest */
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 2, &o, &pr, &e) == 0, "%s", e.msg);
    const int cheapest = pr.r;
    hr_predictor_free(&pr);
    o.min_precision = 0.9;
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 2, &o, &pr, &e) == 0, "%s", e.msg);
    naive_quality(&pr, te, &rc2, &pc2);
    printf("cheapest rank %d; at precision >= 0.9: rank %d, fresh precision %.4f\n", cheapest, pr.r, pc2);
    CHECKF(cheapest == 4 && pr.r > cheapest && pc2 >= 0.85, "cheapest %d, chosen %d at %.4f", cheapest, pr.r, pc2);
    hr_predictor_free(&pr);
}

static float silu(float g) { return g / (1.0f + expf(-g)); }

/* Labels |silu(G p / rms(p))| > t on the pairs' inputs. */
static void band_labels(const float *G, pairs *s, float t) {
    const size_t mb = (FF + 7) / 8;
    memset(s->M, 0, (size_t)s->n * mb);
    for (int i = 0; i < s->n; i++) {
        const float *p = s->P + (size_t)i * D;
        double ss = 0, g;
        for (int c = 0; c < D; c++) ss += (double)p[c] * p[c];
        for (int j = 0; j < FF; j++) {
            g = 0;
            for (int c = 0; c < D; c++) g += (double)G[j * D + c] * p[c];
            if (fabsf(silu((float)(g / sqrt(ss / D)))) > t) s->M[(size_t)i * mb + j / 8] |= (uint8_t)(1u << (j % 8));
        }
    }
}

/* The band (lo, hi) where |silu| <= t, by bisection on each side of 0 (t under silu's dip). */
static void silu_band(float t, float *lo, float *hi) {
    float a = 0, b = 8;
    for (int i = 0; i < 60; i++) *(fabsf(silu(0.5f * (a + b))) > t ? &b : &a) = 0.5f * (a + b);
    *hi = b;
    a = 0, b = -1.278f;
    for (int i = 0; i < 60; i++) *(fabsf(silu(0.5f * (a + b))) > t ? &b : &a) = 0.5f * (a + b);
    *lo = b;
}

/* The band's two-sided test fits the two-sided set that a one-sided test on the same
 * estimate cannot; below full rank the shift still buys the recall. */
static void band(hr_cpu *cpu, const float *G, pairs *tr, pairs *te) {
    const float t = 0.17f;
    band_labels(G, tr, t), band_labels(G, te, t);
    hr_pred_opts o = {.recall = 0.99, .max_rank = D, .min_rank = D, .ffn_neuron_bytes = 1e6, .seed = 3, .band = true};
    silu_band(t, &o.band_lo, &o.band_hi);
    hr_predictor pb, p1;
    hr_err e;
    double rb, pcb, r1, pc1;
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, G, 1, &o, &pb, &e) == 0, "%s", e.msg);
    naive_quality(&pb, te, &rb, &pcb);
    printf("band (%.4f, %.4f), rank %d: fresh recall %.4f precision %.4f, active %.3f\n", (double)o.band_lo, (double)o.band_hi, pb.r,
           rb, pcb, pb.true_frac);
    CHECK(pb.band && pb.m == 1 && pb.true_frac > 0.4 && pb.true_frac < 0.8);
    CHECKF(rb >= 0.985 && pcb >= 0.97, "recall %.4f precision %.4f", rb, pcb);
    o.band = false; /* one-sided on the same estimate: only the large positive products */
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, G, 1, &o, &p1, &e) == 0, "%s", e.msg);
    naive_quality(&p1, te, &r1, &pc1);
    printf("one-sided: fresh recall %.4f precision %.4f\n", r1, pc1);
    CHECKF(pcb >= pc1 + 0.15, "band %.4f, one-sided %.4f", pcb, pc1);
    hr_predictor_free(&pb), hr_predictor_free(&p1);
    o.band = true, o.min_rank = o.max_rank = 16, o.recall = 0.98;
    CHECKF(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, G, 1, &o, &pb, &e) == 0, "%s", e.msg);
    naive_quality(&pb, te, &rb, &pcb);
    printf("band, rank %d: fresh recall %.4f precision %.4f\n", pb.r, rb, pcb);
    CHECKF(pb.r == 16 && rb >= 0.97 && pcb > pb.true_frac, "r %d recall %.4f precision %.4f", pb.r, rb, pcb);
    hr_predictor_free(&pb);
    o.band_lo = 1, o.band_hi = 0;
    CHECK(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, G, 1, &o, &pb, &e) < 0 && strstr(e.msg, "lo <= hi"));
    o.band_lo = -1;
    CHECK(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, G, 2, &o, &pb, &e) < 0 && strstr(e.msg, "one score block"));
}

static void bad_input(hr_cpu *cpu, const float *GU, const pairs *tr) {
    hr_predictor pr;
    hr_err e = {{0}};
    hr_pred_opts o = {.recall = 0.99};
    CHECK(hr_predictor_fit_linear(cpu, tr->P, tr->M, 5, D, FF, GU, 2, &o, &pr, &e) < 0 && strstr(e.msg, "too few"));
    CHECK(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 3, &o, &pr, &e) < 0 && strstr(e.msg, "1 or 2"));
    o.recall = 1.5;
    CHECK(hr_predictor_fit_linear(cpu, tr->P, tr->M, tr->n, D, FF, GU, 2, &o, &pr, &e) < 0 && strstr(e.msg, "recall target"));
    CHECK(pr.fc1 == NULL && pr.bias == NULL);
}

int main(void) {
    hr_cpu cpu;
    hr_err e;
    if (hr_cpu_init(&cpu, 2, &e)) return 1;
    hr_rng r = {41};
    float *GU = randm(&r, 2 * FF, D, 1.0f), *B = randm(&r, D, D, 1.0f / sqrtf(D));
    pairs tr = make(&r, GU, B, 4000), te = make(&r, GU, B, 1000);
    full_rank(&cpu, GU, &tr, &te);
    low_rank(&cpu, GU, &tr, &te);
    bad_input(&cpu, GU, &tr);
    float *G = randm(&r, FF, D, 0.5f / sqrtf(D));
    band(&cpu, G, &tr, &te);
    free(G);
    free(GU), free(B), free(tr.P), free(tr.M), free(te.P), free(te.M);
    hr_cpu_free(&cpu);
    return TEST_END();
}
