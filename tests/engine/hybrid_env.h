/* Helpers shared by the hybrid (CPU + device) engine tests. */
#ifndef HR_TEST_HYBRID_ENV_H
#define HR_TEST_HYBRID_ENV_H
#include <stddef.h>
#include <stdint.h>
#include "hearth.h"

/* The device the hybrid tests run on: the CPU stand-in (its fixed overhead), or with
 * HEARTH_TEST_GPU=cuda CUDA device 0 (the overhead it reports). Returns 0, or 77 (ctest's
 * skip code) after printing why when that device cannot be opened. */
int hr_test_gpu_env(hearth_gpu_mode *dev, uint64_t *overhead);

/* np tokens toks[] over two sequences in one batch (token i: sequence i % 2, position i / 2),
 * then t2[0] and t2[1], one per sequence: logits of all np + 2 into out [np + 2][n_vocab]. */
int hr_test_eval_two_seqs(hearth_ctx *c, int32_t np, const int32_t *toks, const int32_t t2[2], int32_t n_vocab,
                          float *out, hr_err *e);

/* Firing counts of the MoE hybrid tests' statistics: expert (l, x) routed 500 times, firing on
 * the neurons j with (j + 3x + 5l) % 16 == 0, count 1 + (7j + 13x + 3l) % 50 (0 elsewhere). */
void hr_test_moe_counts(uint32_t *counts, uint32_t *expert_counts, int layers, int ne, int32_t ff);

/* The largest |a[i] - b[i]|. */
double hr_test_max_diff(const float *a, const float *b, size_t n);
#endif
