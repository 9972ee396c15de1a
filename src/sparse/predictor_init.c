/* Starting point for predictor training: the data-weighted truncated SVD of the
 * effective deciding matrix G (gate rows times the norm weight). For ReGLU with RMSNorm,
 * neuron j fires iff (G p)_j > 0, so a rank-k approximation Q Q^T G p is a linear
 * predictor; through the ReLU it becomes fc1 = [A; -A], fc2 = [Q, -Q] with A = Q^T G,
 * because relu(z) - relu(-z) = z. Q spans the top-k eigenvectors of G C G^T, C = E[p p^T]:
 * the rank-k map that best reproduces G p on the data.
 * The operator is built once per training (pred_start) and every product goes through the
 * CPU matmul: done with scalar loops per rank, this start took over 20 s per expert of a
 * SmallThinker-shaped mixture (n_embd 1536, experts of 768), more than the training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/types.h"
#include "pred_internal.h"

#define SUBSPACE_ITERS 24
#define COV_SAMPLES 4096
#define SCALE_SAMPLES 512
#define SCORE_RMS 4.0

uint64_t hr_pred_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int hr_pred_cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

void hr_pred_gather(const pred_data *D, const int32_t *ids, int64_t nb, float *Pb) {
    for (int64_t t = 0; t < nb; t++) memcpy(Pb + t * D->d, D->P + (int64_t)ids[t] * D->d, sizeof(float) * (size_t)D->d);
}

void hr_pred_round_f16(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_f16_to_f32(hr_f32_to_f16(x[i]));
}

float hr_pred_randn(uint64_t *s) {
    double u1 = ((double)(hr_pred_rand(s) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(hr_pred_rand(s) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

int hr_pred_mm(hr_cpu *cpu, const float *W, int64_t n_in, int64_t n_out, const float *X, int64_t n_tok, float *Y, hr_err *e) {
    hr_mat m = {.type = HR_F32, .n_in = n_in, .n_out = n_out, .row_bytes = (size_t)n_in * sizeof(float), .data = W};
    return hr_matmul(cpu, &m, X, n_tok, Y, e);
}

/* In tiles, so that neither side strides through memory a whole row per element. */
void hr_pred_transpose(const float *A, int64_t rows, int64_t cols, float *At) {
    enum { T = 32 };
    for (int64_t i0 = 0; i0 < rows; i0 += T)
        for (int64_t j0 = 0; j0 < cols; j0 += T) {
            const int64_t i1 = i0 + T < rows ? i0 + T : rows, j1 = j0 + T < cols ? j0 + T : cols;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) At[j * rows + i] = A[i * cols + j];
        }
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

void hr_pred_start_free(pred_start *S) {
    free(S->Ps), free(S->a), free(S->Gt), free(S->M), free(S->C);
    memset(S, 0, sizeof *S);
}

/* The operator: M = (G Ps^T)(G Ps^T)^T / n where experts are narrower than their input (one
 * [ff][ff] product per iteration), else C = Ps^T Ps / n, applied as G C G^T. */
static int build_operator(hr_cpu *cpu, pred_start *S, int64_t d, int64_t ff, hr_err *e) {
    const int64_t n = S->n;
    const bool narrow = ff <= d;
    float *A = malloc(sizeof(float) * (size_t)(n * (narrow ? ff : d))), *B = malloc(sizeof(float) * (size_t)(n * (narrow ? ff : d)));
    float *O = malloc(sizeof(float) * (size_t)(narrow ? ff * ff : d * d));
    int rc = !A || !B || !O ? hr_errf(e, "out of memory for the predictor's start") : 0;
    if (!rc && narrow) { /* A = Ps G^T [n][ff], B its transpose, O = B B^T */
        rc = hr_pred_mm(cpu, S->G, d, ff, S->Ps, n, A, e);
        if (!rc) hr_pred_transpose(A, n, ff, B), rc = hr_pred_mm(cpu, B, n, ff, B, ff, O, e);
    } else if (!rc) { /* B = Ps^T [d][n], O = B B^T */
        hr_pred_transpose(S->Ps, n, d, B);
        rc = hr_pred_mm(cpu, B, n, d, B, d, O, e);
    }
    free(A), free(B);
    if (rc) return free(O), -1;
    const int64_t no = narrow ? ff * ff : d * d;
    for (int64_t i = 0; i < no; i++) O[i] /= (float)n;
    if (narrow) S->M = O;
    else S->C = O;
    return 0;
}

int hr_pred_start_init(hr_cpu *cpu, pred_start *S, const pred_data *D, const float *G, hr_err *e) {
    const int64_t d = D->d, ff = D->ff, n = D->n_train < COV_SAMPLES ? D->n_train : COV_SAMPLES;
    memset(S, 0, sizeof *S);
    S->n = n, S->G = G;
    S->Ps = malloc(sizeof(float) * (size_t)(n * d)), S->a = calloc((size_t)d, sizeof(float));
    if (G) S->Gt = malloc(sizeof(float) * (size_t)(d * ff));
    if (!S->Ps || !S->a || (G && !S->Gt)) return hr_pred_start_free(S), hr_errf(e, "out of memory for the predictor's start");
    for (int64_t s = 0; s < n; s++) memcpy(S->Ps + s * d, D->P + (int64_t)D->idx[s * D->n_train / n] * d, sizeof(float) * (size_t)d);
    /* bias pair: |a.p| with a the mean direction of p, a per-neuron offset that scales with p */
    for (int64_t s = 0; s < D->n_train; s++)
        for (int64_t i = 0; i < d; i++) S->a[i] += D->P[(int64_t)D->idx[s] * d + i];
    double na = 0;
    for (int64_t i = 0; i < d; i++) na += (double)S->a[i] * S->a[i];
    if (na < 1e-20) S->a[0] = 1, na = 1;
    for (int64_t i = 0; i < d; i++) S->a[i] = (float)(S->a[i] / sqrt(na));
    if (!G) return 0;
    hr_pred_transpose(G, ff, d, S->Gt);
    if (build_operator(cpu, S, d, ff, e)) return hr_pred_start_free(S), -1;
    return 0;
}

/* Qt <- (G C G^T Q)^T; T1, T2: [k][max(d, ff)] scratch. */
static int apply(hr_cpu *cpu, const pred_start *S, int64_t d, int64_t ff, int64_t k, float *Qt, float *T1, float *T2, hr_err *e) {
    if (S->M) {
        if (hr_pred_mm(cpu, S->M, ff, ff, Qt, k, T1, e)) return -1;
        memcpy(Qt, T1, sizeof(float) * (size_t)(k * ff));
        return 0;
    }
    if (hr_pred_mm(cpu, S->Gt, ff, d, Qt, k, T1, e) || hr_pred_mm(cpu, S->C, d, d, T1, k, T2, e)) return -1; /* T2 = Q^T G C */
    return hr_pred_mm(cpu, S->G, d, ff, T2, k, Qt, e);
}

/* Qt [k][n_ff]: top-k eigenvectors of G C G^T by subspace iteration. */
int hr_pred_top_subspace(hr_cpu *cpu, const pred_start *S, int64_t d, int64_t ff, int64_t k, uint64_t *rng, float *Qt, hr_err *e) {
    const int64_t w = d > ff ? d : ff;
    float *T1 = malloc(sizeof(float) * (size_t)(k * w)), *T2 = malloc(sizeof(float) * (size_t)(k * w));
    int rc = !T1 || !T2 ? hr_errf(e, "out of memory for the predictor's start") : 0;
    for (int64_t i = 0; !rc && i < k * ff; i++) Qt[i] = hr_pred_randn(rng);
    if (!rc) orthonormalize(Qt, k, ff, rng);
    for (int it = 0; !rc && it < SUBSPACE_ITERS; it++)
        if (!(rc = apply(cpu, S, d, ff, k, Qt, T1, T2, e))) orthonormalize(Qt, k, ff, rng);
    free(T1), free(T2);
    return rc;
}

/* Hidden unit c gets unit RMS over the data; fc2's column takes the inverse scale, so
 * the function is unchanged (ReLU is positively homogeneous). H: [n][r] scratch. */
static int normalize_units(hr_cpu *cpu, pred_net *N, const pred_start *S, float *H, hr_err *e) {
    const int64_t d = N->d, r = N->r, n = S->n;
    if (hr_pred_mm(cpu, N->fc1, d, r, S->Ps, n, H, e)) return -1;
    for (int64_t c = 0; c < r; c++) {
        double ss = 0;
        for (int64_t s = 0; s < n; s++) ss += (double)H[s * r + c] * H[s * r + c];
        double rms = sqrt(ss / (double)n);
        if (rms < 1e-30) continue;
        for (int64_t i = 0; i < d; i++) N->fc1[c * d + i] = (float)(N->fc1[c * d + i] / rms);
        for (int64_t j = 0; j < N->ff; j++) N->fc2[j * r + c] = (float)(N->fc2[j * r + c] * rms);
    }
    return 0;
}

/* Scores start with RMS SCORE_RMS over the data, so the loss is neither flat nor saturated.
 * Scaling fc2 changes no decision. H: [n][r], Sc: [SCALE_SAMPLES][ff] scratch. */
static int scale_scores(hr_cpu *cpu, pred_net *N, const pred_start *S, float *H, float *Sc, hr_err *e) {
    const int64_t r = N->r, n = S->n < SCALE_SAMPLES ? S->n : SCALE_SAMPLES; /* Ps is a random sample: its first rows are too */
    if (hr_pred_mm(cpu, N->fc1, N->d, r, S->Ps, n, H, e)) return -1;
    for (int64_t i = 0; i < n * r; i++) H[i] = H[i] > 0 ? H[i] : 0.0f;
    if (hr_pred_mm(cpu, N->fc2, r, N->ff, H, n, Sc, e)) return -1;
    double ss = 0;
    for (int64_t i = 0; i < n * N->ff; i++) ss += (double)Sc[i] * Sc[i];
    double rms = sqrt(ss / ((double)n * (double)N->ff));
    if (rms > 1e-30)
        for (int64_t i = 0; i < N->ff * r; i++) N->fc2[i] = (float)(N->fc2[i] * SCORE_RMS / rms);
    return 0;
}

/* fc1 = [Q^T G; -Q^T G; a; -a], fc2 = [Q, -Q, 0, 0] from the top-k subspace. */
static int svd_start(hr_cpu *cpu, pred_net *N, const pred_start *S, uint64_t *rng, hr_err *e) {
    const int64_t d = N->d, ff = N->ff, r = N->r, k = (r - 2) / 2;
    float *Qt = malloc(sizeof(float) * (size_t)(k * ff));
    int rc = !Qt ? hr_errf(e, "out of memory for the predictor's start") : hr_pred_top_subspace(cpu, S, d, ff, k, rng, Qt, e);
    if (!rc) rc = hr_pred_mm(cpu, S->Gt, ff, d, Qt, k, N->fc1, e); /* A = Q^T G, rows 0..k-1 */
    for (int64_t c = 0; !rc && c < k; c++) {
        for (int64_t j = 0; j < ff; j++) N->fc2[j * r + c] = Qt[c * ff + j], N->fc2[j * r + k + c] = -Qt[c * ff + j];
        for (int64_t i = 0; i < d; i++) N->fc1[(k + c) * d + i] = -N->fc1[c * d + i];
    }
    free(Qt);
    return rc;
}

int hr_pred_init(hr_cpu *cpu, pred_net *N, const pred_data *D, const pred_start *S, uint64_t *rng, hr_err *e) {
    const int64_t d = D->d, ff = D->ff, r = N->r, n = S->n;
    memset(N->fc1, 0, sizeof(float) * (size_t)(r * d));
    memset(N->fc2, 0, sizeof(float) * (size_t)(ff * r));
    for (int64_t i = 0; i < d; i++) N->fc1[(r - 2) * d + i] = S->a[i], N->fc1[(r - 1) * d + i] = -S->a[i];
    if (S->G) {
        if (svd_start(cpu, N, S, rng, e)) return -1;
    } else {
        for (int64_t i = 0; i < (r - 2) * d; i++) N->fc1[i] = hr_pred_randn(rng);
        for (int64_t j = 0; j < ff; j++)
            for (int64_t c = 0; c < r - 2; c++) N->fc2[j * r + c] = hr_pred_randn(rng) / sqrtf((float)r);
    }
    const int64_t ns = n < SCALE_SAMPLES ? n : SCALE_SAMPLES;
    float *H = malloc(sizeof(float) * (size_t)(n * r)), *Sc = malloc(sizeof(float) * (size_t)(ns * ff));
    int rc = !H || !Sc ? hr_errf(e, "out of memory for the predictor's start") : normalize_units(cpu, N, S, H, e);
    if (!rc) rc = scale_scores(cpu, N, S, H, Sc, e);
    free(H), free(Sc);
    return rc;
}
