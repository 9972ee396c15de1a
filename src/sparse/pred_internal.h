/* Shared by predictor_init.c and predictor_train.c. */
#ifndef HR_PRED_INTERNAL_H
#define HR_PRED_INTERNAL_H
#include <stdint.h>
#include "calibrate.h"

/* Pairs split by a seeded shuffle: idx[0, n_train) train, then n_calib pairs that set the
 * recall shift, then n_test pairs that measure the result. */
typedef struct pred_data {
    const float *P;
    const uint8_t *masks;
    size_t mb;
    int64_t d, ff;
    int32_t *idx;
    int64_t n_train, n_calib, n_test;
} pred_data;

/* A predictor under training: r hidden units, the last two the fixed pair a, -a. */
typedef struct pred_net {
    int64_t r, d, ff;
    float *fc1; /* [r][d] */
    float *fc2; /* [ff][r] */
} pred_net;

/* What the starts of every rank share, computed once per training (hr_pred_start_init): the
 * rank search tries several widths on the same pairs, and the data-weighted operator
 * G C G^T costs more to build than any one start takes from it. */
typedef struct pred_start {
    int64_t n;      /* training inputs sampled for the start */
    float *Ps;      /* [n][d] those inputs */
    float *a;       /* [d] unit mean direction of all training inputs */
    const float *G; /* [ff][d] the deciding matrix; NULL: random start */
    float *Gt;      /* [d][ff] */
    float *M;       /* [ff][ff] G C G^T, built when ff <= d (experts); else NULL and C is kept */
    float *C;       /* [d][d] mean of p p^T over the sample */
} pred_start;

uint64_t hr_pred_rand(uint64_t *s); /* splitmix64 */
float hr_pred_randn(uint64_t *s);
int hr_pred_cmp_f(const void *a, const void *b); /* qsort of floats, ascending */
void hr_pred_round_f16(float *x, int64_t n);     /* each value rounded to F16 and back */
/* Pb [nb][d] = the inputs of pairs ids[0..nb) */
void hr_pred_gather(const pred_data *D, const int32_t *ids, int64_t nb, float *Pb);
/* Y = X W^T with W F32 [n_out][n_in], X [n_tok][n_in]: the CPU matmul, whose results do not
 * depend on the thread count. */
int hr_pred_mm(hr_cpu *cpu, const float *W, int64_t n_in, int64_t n_out, const float *X, int64_t n_tok, float *Y, hr_err *e);
void hr_pred_transpose(const float *A, int64_t rows, int64_t cols, float *At);
int hr_pred_start_init(hr_cpu *cpu, pred_start *S, const pred_data *D, const float *G, hr_err *e);
void hr_pred_start_free(pred_start *S);
/* Qt [k][ff]: an orthonormal basis of the top-k eigenvectors of G C G^T (S's operator). */
int hr_pred_top_subspace(hr_cpu *cpu, const pred_start *S, int64_t d, int64_t ff, int64_t k, uint64_t *rng, float *Qt, hr_err *e);
/* Seeded shuffle of n pairs into D->idx: 80% train, 10% calibration, 10% test. */
int hr_pred_split(pred_data *D, int64_t n, uint64_t *rng, hr_err *e);
int hr_pred_init(hr_cpu *cpu, pred_net *N, const pred_data *D, const pred_start *S, uint64_t *rng, hr_err *e);

#endif
