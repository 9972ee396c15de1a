/* Predictor training on hand-built layers whose active sets are known: neuron j fires
 * iff (G p)_j > 0. Quality is measured here on fresh pairs with a naive evaluation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sparse/calibrate.h"
#include "testutil.h"

typedef struct {
    int d, ff, n;
    float *P;
    uint8_t *M;
} pairs;

/* p = mean + basis combination of k latent normals (k = d: full rank). */
static pairs make(hr_rng *r, const float *G, const float *B, int d, int k, int ff, int n) {
    pairs s = {d, ff, n, malloc(sizeof(float) * (size_t)n * d), calloc((size_t)n * ((ff + 7) / 8), 1)};
    for (int t = 0; t < n; t++) {
        float *p = s.P + (size_t)t * d;
        float z[64];
        for (int c = 0; c < k; c++) z[c] = hr_rng_normal(r);
        for (int i = 0; i < d; i++) {
            p[i] = 0.3f;
            for (int c = 0; c < k; c++) p[i] += B[c * d + i] * z[c];
        }
        for (int j = 0; j < ff; j++) {
            double g = 0;
            for (int i = 0; i < d; i++) g += (double)G[j * d + i] * p[i];
            if (g > 0) s.M[(size_t)t * ((ff + 7) / 8) + j / 8] |= (uint8_t)(1u << (j % 8));
        }
    }
    return s;
}

/* Naive: score_j = sum_c fc2[j][c] relu(fc1[c] . p); active iff score >= 0. */
static void naive_quality(const hr_predictor *pr, const pairs *s, double *recall, double *precision) {
    long tp = 0, fn = 0, fp = 0;
    double *h = malloc(sizeof(double) * (size_t)pr->r);
    for (int t = 0; t < s->n; t++) {
        const float *p = s->P + (size_t)t * s->d;
        for (int c = 0; c < pr->r; c++) {
            double z = 0;
            for (int i = 0; i < s->d; i++) z += (double)pr->fc1[c * s->d + i] * p[i];
            h[c] = z > 0 ? z : 0;
        }
        for (int j = 0; j < s->ff; j++) {
            double sc = 0;
            for (int c = 0; c < pr->r; c++) sc += (double)pr->fc2[j * pr->r + c] * h[c];
            bool y = hr_pair_bit(s->M + (size_t)t * ((s->ff + 7) / 8), j), pred = sc >= 0;
            tp += y && pred, fn += y && !pred, fp += !y && pred;
        }
    }
    free(h);
    *recall = (double)tp / (double)(tp + fn);
    *precision = (double)tp / (double)(tp + fp);
}

static float *randm(hr_rng *r, int rows, int cols, float scale) {
    float *m = malloc(sizeof(float) * (size_t)rows * cols);
    for (int i = 0; i < rows * cols; i++) m[i] = hr_rng_normal(r) * scale;
    return m;
}

/* Given the deciding matrix, the SVD start makes a full-rank predictor nearly exact. */
static void with_gate(hr_cpu *cpu) {
    enum { D = 32, FF = 96 };
    hr_rng r = {21};
    float *G = randm(&r, FF, D, 1.0f), *B = randm(&r, D, D, 1.0f / sqrtf(D));
    pairs tr = make(&r, G, B, D, D, FF, 3000), te = make(&r, G, B, D, D, FF, 1000);
    hr_pred_opts o = {.recall = 0.99, .max_rank = 1024, .epochs = 3, .ffn_neuron_bytes = 1e6, .seed = 3};
    hr_predictor pr;
    hr_err e;
    CHECKF(hr_predictor_train(cpu, tr.P, tr.M, tr.n, D, FF, G, &o, &pr, &e) == 0, "%s", e.msg);
    double rec, prec, r2, p2, frac;
    naive_quality(&pr, &te, &rec, &prec);
    printf("with gate: r %d, fresh recall %.4f precision %.4f (held-out %.4f / %.4f)\n", pr.r, rec, prec, pr.recall, pr.precision);
    CHECK(pr.r > D && pr.r <= 2 * D + 2);
    CHECKF(rec >= 0.985 && prec >= 0.95, "recall %.4f precision %.4f", rec, prec);
    CHECK(fabs(pr.recall - rec) < 0.01);
    /* the library's evaluation agrees with the naive one */
    CHECK(hr_predictor_eval(cpu, &pr, te.P, te.M, te.n, &r2, &p2, &frac, &e) == 0);
    CHECKF(fabs(r2 - rec) < 1e-3 && fabs(p2 - prec) < 1e-3, "eval %.4f/%.4f vs naive %.4f/%.4f", r2, p2, rec, prec);
    hr_predictor_free(&pr);
    /* when predictor bytes dominate, the smallest rank wins, and still reaches the recall */
    o.ffn_neuron_bytes = 0, o.recall = 0.95;
    CHECKF(hr_predictor_train(cpu, tr.P, tr.M, tr.n, D, FF, G, &o, &pr, &e) == 0, "%s", e.msg);
    naive_quality(&pr, &te, &rec, &prec);
    printf("cheap: r %d, fresh recall %.4f precision %.4f\n", pr.r, rec, prec);
    CHECK(pr.r == 16 && rec >= 0.94);
    hr_predictor_free(&pr);
    free(G), free(B), free(tr.P), free(tr.M), free(te.P), free(te.M);
}

/* Without the gate: data in an 6-dimensional subspace, learned from a random start. */
static void from_scratch(hr_cpu *cpu) {
    enum { D = 48, K = 6, FF = 64 };
    hr_rng r = {33};
    float *G = randm(&r, FF, D, 1.0f), *B = randm(&r, K, D, 1.0f);
    pairs tr = make(&r, G, B, D, K, FF, 4000), te = make(&r, G, B, D, K, FF, 1000);
    hr_pred_opts o = {.recall = 0.97, .max_rank = 32, .min_rank = 32, .epochs = 30, .ffn_neuron_bytes = 1e6, .seed = 5};
    hr_predictor pr;
    hr_err e;
    CHECKF(hr_predictor_train(cpu, tr.P, tr.M, tr.n, D, FF, NULL, &o, &pr, &e) == 0, "%s", e.msg);
    double rec, prec;
    naive_quality(&pr, &te, &rec, &prec);
    double base = pr.true_frac; /* precision of "all active" */
    printf("from scratch: r %d, fresh recall %.4f precision %.4f (all-active precision %.3f)\n", pr.r, rec, prec, base);
    CHECKF(rec >= 0.96 && prec >= base + 0.3, "recall %.4f precision %.4f", rec, prec);
    hr_predictor_free(&pr);
    free(G), free(B), free(tr.P), free(tr.M), free(te.P), free(te.M);
}

static void bad_input(hr_cpu *cpu) {
    float P[64 * 8] = {0};
    uint8_t M[64] = {0};
    hr_predictor pr;
    hr_err e = {{0}};
    hr_pred_opts o = {.recall = 0.99, .max_rank = 16};
    CHECK(hr_predictor_train(cpu, P, M, 5, 8, 8, NULL, &o, &pr, &e) < 0 && strstr(e.msg, "too few"));
    o.recall = 1.5;
    CHECK(hr_predictor_train(cpu, P, M, 64, 8, 8, NULL, &o, &pr, &e) < 0 && strstr(e.msg, "recall target"));
    o.recall = 0.9, o.max_rank = 2;
    CHECK(hr_predictor_train(cpu, P, M, 64, 8, 8, NULL, &o, &pr, &e) < 0 && strstr(e.msg, "max rank"));
    CHECK(pr.fc1 == NULL);
}

int main(void) {
    hr_cpu cpu;
    hr_err e;
    if (hr_cpu_init(&cpu, 2, &e)) return 1;
    with_gate(&cpu);
    from_scratch(&cpu);
    bad_input(&cpu);
    hr_cpu_free(&cpu);
    return TEST_END();
}
