/* Helpers shared by the hybrid (CPU + device) engine tests. */
#ifndef HR_TEST_HYBRID_ENV_H
#define HR_TEST_HYBRID_ENV_H
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
#endif
