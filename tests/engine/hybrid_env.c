#include "hybrid_env.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device.h"
#include "backends/device/standin.h"
#include "util/err.h"

int hr_test_gpu_env(hearth_gpu_mode *dev, uint64_t *overhead) {
    *dev = HEARTH_GPU_STANDIN, *overhead = HR_STANDIN_OVERHEAD;
    const char *g = getenv("HEARTH_TEST_GPU");
    if (!g || strcmp(g, "cuda") != 0) return 0;
    hr_err e = {{0}};
    hr_dev *d = hr_dev_cuda_open(0, &e);
    if (!d) return printf("skip: %s\n", e.msg), 77;
    *dev = HEARTH_GPU_CUDA, *overhead = d->ops->overhead(d);
    hr_dev_close(d);
    return 0;
}

int hr_test_eval_two_seqs(hearth_ctx *c, int32_t np, const int32_t *toks, const int32_t t2[2], int32_t n_vocab,
                          float *out, hr_err *e) {
    int32_t *pos = malloc(sizeof *pos * (size_t)np), *seq = malloc(sizeof *seq * (size_t)np);
    bool *want = malloc(sizeof *want * (size_t)np);
    int rc = pos && seq && want ? 0 : hr_errf(e, "out of memory");
    for (int32_t i = 0; !rc && i < np; i++) seq[i] = i % 2, pos[i] = i / 2, want[i] = true;
    hearth_batch b = {np, toks, pos, seq, want};
    if (!rc) rc = hearth_eval_batch(c, &b, e);
    for (int32_t i = 0; !rc && i < np; i++) memcpy(out + (size_t)i * (size_t)n_vocab, hearth_logits(c, i), sizeof(float) * (size_t)n_vocab);
    int32_t t[2] = {t2[0], t2[1]}, p2[2] = {np / 2, np / 2}, s2[2] = {0, 1};
    hearth_batch d = {2, t, p2, s2, want};
    if (!rc) rc = hearth_eval_batch(c, &d, e);
    for (int32_t i = 0; !rc && i < 2; i++)
        memcpy(out + (size_t)(np + i) * (size_t)n_vocab, hearth_logits(c, i), sizeof(float) * (size_t)n_vocab);
    free(pos), free(seq), free(want);
    return rc;
}

void hr_test_moe_counts(uint32_t *counts, uint32_t *expert_counts, int layers, int ne, int32_t ff) {
    for (int il = 0; il < layers; il++)
        for (int x = 0; x < ne; x++) {
            expert_counts[il * ne + x] = 500;
            for (int j = 0; j < ff; j++)
                counts[((size_t)il * (size_t)ne + (size_t)x) * (size_t)ff + (size_t)j] =
                    (j + 3 * x + 5 * il) % 16 ? 0 : (uint32_t)(1 + (7 * j + 13 * x + 3 * il) % 50);
        }
}

double hr_test_max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}
