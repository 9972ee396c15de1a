/* The linear predictor form (predictor_linear.c) on hand-built dReLU layers whose active
 * sets are known: neuron j fires iff (G p)_j > 0 and (U p)_j > 0. Quality is measured on
 * fresh pairs with a naive evaluation of the rule the engine runs (ffn.c): every score
 * block s + bias * rms(p) >= 0. */
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

static void naive_quality(const hr_predictor *pr, const pairs *s, double *recall, double *precision) {
    long tp = 0, fn = 0, fp = 0;
    double *h = malloc(sizeof(double) * (size_t)pr->r);
    for (int t = 0; t < s->n; t++) {
        const float *p = s->P + (size_t)t * D;
        double ss = 0;
        for (int i = 0; i < D; i++) ss += (double)p[i] * p[i];
        const double rms = sqrt(ss / D);
        for (int c = 0; c < pr->r; c++) {
            h[c] = 0;
            for (int i = 0; i < D; i++) h[c] += (double)pr->fc1[c * D + i] * p[i];
        }
        for (int j = 0; j < FF; j++) {
            bool on = true;
            for (int b = 0; b < pr->m; b++) {
                double sc = 0;
                for (int c = 0; c < pr->r; c++) sc += (double)pr->fc2[(b * FF + j) * pr->r + c] * h[c];
                on = on && sc + pr->bias[b * FF + j] * rms >= 0;
            }
            const bool y = hr_pair_bit(s->M + (size_t)t * ((FF + 7) / 8), j);
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
    free(GU), free(B), free(tr.P), free(tr.M), free(te.P), free(te.M);
    hr_cpu_free(&cpu);
    return TEST_END();
}
