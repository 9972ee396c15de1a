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

uint64_t hr_pred_rand(uint64_t *s); /* splitmix64 */
float hr_pred_randn(uint64_t *s);
int hr_pred_init(pred_net *N, const pred_data *D, const float *G, uint64_t *rng);

#endif
