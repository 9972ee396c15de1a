/* Starting point for predictor training: the data-weighted truncated SVD of the
 * effective deciding matrix G (gate rows times the norm weight). For ReGLU with RMSNorm,
 * neuron j fires iff (G p)_j > 0, so a rank-k approximation Q Q^T G p is a linear
 * predictor; through the ReLU it becomes fc1 = [A; -A], fc2 = [Q, -Q] with A = Q^T G,
 * because relu(z) - relu(-z) = z. Q spans the top-k eigenvectors of G C G^T, C = E[p p^T]:
 * the rank-k map that best reproduces G p on the data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "pred_internal.h"

#define SUBSPACE_ITERS 24
#define COV_SAMPLES 4096
#define SCORE_RMS 4.0

uint64_t hr_pred_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float hr_pred_randn(uint64_t *s) {
    double u1 = ((double)(hr_pred_rand(s) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(hr_pred_rand(s) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static void orthonormalize(float *Qt, int64_t k, int64_t n, uint64_t *rng) {
    for (int64_t c = 0; c < k; c++) {
        float *q = Qt + c * n;
        for (int pass = 0; pass < 2; pass++)
            for (int64_t b = 0; b < c; b++) {
                const float *o = Qt + b * n;
                double dot = 0;
                for (int64_t j = 0; j < n; j++) dot += (double)q[j] * o[j];
                for (int64_t j = 0; j < n; j++) q[j] -= (float)dot * o[j];
            }
        double nn = 0;
        for (int64_t j = 0; j < n; j++) nn += (double)q[j] * q[j];
        if (nn < 1e-20) { /* degenerate direction: restart it randomly */
            for (int64_t j = 0; j < n; j++) q[j] = hr_pred_randn(rng);
            c--;
            continue;
        }
        float inv = (float)(1.0 / sqrt(nn));
        for (int64_t j = 0; j < n; j++) q[j] *= inv;
    }
}

/* C = mean of p p^T over (a sample of) the training pairs; [d][d]. */
static float *covariance(const pred_data *D) {
    const int64_t d = D->d, n = D->n_train < COV_SAMPLES ? D->n_train : COV_SAMPLES;
    float *C = calloc((size_t)(d * d), sizeof(float));
    if (!C) return NULL;
    for (int64_t s = 0; s < n; s++) {
        const float *p = D->P + (int64_t)D->idx[s * D->n_train / n] * d;
        for (int64_t i = 0; i < d; i++) {
            float pi = p[i] / (float)n;
            for (int64_t l = 0; l < d; l++) C[i * d + l] += pi * p[l];
        }
    }
    return C;
}

/* Qt [k][n_ff]: top-k eigenvectors of G C G^T by subspace iteration. */
static int top_subspace(const float *G, const float *C, int64_t d, int64_t ff, int64_t k, uint64_t *rng, float *Qt) {
    float *T1 = malloc(sizeof(float) * (size_t)(k * d)), *T2 = malloc(sizeof(float) * (size_t)(k * d));
    if (!T1 || !T2) {
        free(T1), free(T2);
        return -1;
    }
    for (int64_t i = 0; i < k * ff; i++) Qt[i] = hr_pred_randn(rng);
    orthonormalize(Qt, k, ff, rng);
    for (int it = 0; it < SUBSPACE_ITERS; it++) {
        memset(T1, 0, sizeof(float) * (size_t)(k * d));
        for (int64_t c = 0; c < k; c++) /* T1 = Q^T G */
            for (int64_t j = 0; j < ff; j++) {
                float q = Qt[c * ff + j];
                const float *g = G + j * d;
                for (int64_t i = 0; i < d; i++) T1[c * d + i] += q * g[i];
            }
        for (int64_t c = 0; c < k; c++) /* T2 = T1 C (C symmetric) */
            for (int64_t i = 0; i < d; i++) {
                float s = 0;
                for (int64_t l = 0; l < d; l++) s += T1[c * d + l] * C[l * d + i];
                T2[c * d + i] = s;
            }
        for (int64_t c = 0; c < k; c++) /* Q^T <- (G T2^T)^T */
            for (int64_t j = 0; j < ff; j++) {
                float s = 0;
                for (int64_t i = 0; i < d; i++) s += G[j * d + i] * T2[c * d + i];
                Qt[c * ff + j] = s;
            }
        orthonormalize(Qt, k, ff, rng);
    }
    free(T1), free(T2);
    return 0;
}

/* Hidden unit c gets unit RMS over the data; fc2's column takes the inverse scale, so
 * the function is unchanged (ReLU is positively homogeneous). */
static void normalize_units(pred_net *N, const pred_data *D) {
    const int64_t d = D->d, n = D->n_train < COV_SAMPLES ? D->n_train : COV_SAMPLES;
    for (int64_t c = 0; c < N->r; c++) {
        double ss = 0;
        for (int64_t s = 0; s < n; s++) {
            const float *p = D->P + (int64_t)D->idx[s * D->n_train / n] * d;
            double z = 0;
            for (int64_t i = 0; i < d; i++) z += (double)N->fc1[c * d + i] * p[i];
            ss += z * z;
        }
        double rms = sqrt(ss / (double)n);
        if (rms < 1e-30) continue;
        for (int64_t i = 0; i < d; i++) N->fc1[c * d + i] = (float)(N->fc1[c * d + i] / rms);
        for (int64_t j = 0; j < N->ff; j++) N->fc2[j * N->r + c] = (float)(N->fc2[j * N->r + c] * rms);
    }
}

/* Scores start with RMS SCORE_RMS over the data, so the loss is neither flat nor saturated.
 * Scaling fc2 changes no decision. */
static void scale_scores(pred_net *N, const pred_data *D) {
    const int64_t d = D->d, r = N->r, n = D->n_train < 512 ? D->n_train : 512;
    float *h = malloc(sizeof(float) * (size_t)r);
    if (!h) return;
    double ss = 0;
    for (int64_t s = 0; s < n; s++) {
        const float *p = D->P + (int64_t)D->idx[s * D->n_train / n] * d;
        for (int64_t c = 0; c < r; c++) {
            double z = 0;
            for (int64_t i = 0; i < d; i++) z += (double)N->fc1[c * d + i] * p[i];
            h[c] = z > 0 ? (float)z : 0.0f;
        }
        for (int64_t j = 0; j < N->ff; j++) {
            double z = 0;
            for (int64_t c = 0; c < r; c++) z += (double)N->fc2[j * r + c] * h[c];
            ss += z * z;
        }
    }
    free(h);
    double rms = sqrt(ss / ((double)n * (double)N->ff));
    if (rms > 1e-30)
        for (int64_t i = 0; i < N->ff * r; i++) N->fc2[i] = (float)(N->fc2[i] * SCORE_RMS / rms);
}

int hr_pred_init(pred_net *N, const pred_data *D, const float *G, uint64_t *rng) {
    const int64_t d = D->d, ff = D->ff, r = N->r, k = (r - 2) / 2;
    memset(N->fc1, 0, sizeof(float) * (size_t)(r * d));
    memset(N->fc2, 0, sizeof(float) * (size_t)(ff * r));
    /* bias pair: |a.p| with a the mean direction of p, a per-neuron offset that scales with p */
    float *a = N->fc1 + (r - 2) * d;
    for (int64_t s = 0; s < D->n_train; s++)
        for (int64_t i = 0; i < d; i++) a[i] += D->P[(int64_t)D->idx[s] * d + i];
    double na = 0;
    for (int64_t i = 0; i < d; i++) na += (double)a[i] * a[i];
    if (na < 1e-20) a[0] = 1, na = 1;
    for (int64_t i = 0; i < d; i++) a[i] = (float)(a[i] / sqrt(na)), N->fc1[(r - 1) * d + i] = -a[i];
    if (G) {
        float *C = covariance(D), *Qt = malloc(sizeof(float) * (size_t)(k * ff));
        int bad = !C || !Qt || top_subspace(G, C, d, ff, k, rng, Qt);
        if (!bad)
            for (int64_t c = 0; c < k; c++) {
                for (int64_t j = 0; j < ff; j++) {
                    float q = Qt[c * ff + j];
                    N->fc2[j * r + c] = q, N->fc2[j * r + k + c] = -q;
                    for (int64_t i = 0; i < d; i++) N->fc1[c * d + i] += q * G[j * d + i];
                }
                for (int64_t i = 0; i < d; i++) N->fc1[(k + c) * d + i] = -N->fc1[c * d + i];
            }
        free(C), free(Qt);
        if (bad) return -1;
    } else {
        for (int64_t i = 0; i < (r - 2) * d; i++) N->fc1[i] = hr_pred_randn(rng);
        for (int64_t j = 0; j < ff; j++)
            for (int64_t c = 0; c < r - 2; c++) N->fc2[j * r + c] = hr_pred_randn(rng) / sqrtf((float)r);
    }
    normalize_units(N, D);
    scale_scores(N, D);
    return 0;
}
