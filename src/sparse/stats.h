/* Activation statistics (docs/stats-format.md): per layer and neuron, the number of
 * tokens on which the neuron fired, plus optional predictor quality figures. Written by
 * `hearth calibrate` beside the model as <model>.stats.gguf, read by `hearth place`. */
#ifndef HR_STATS_H
#define HR_STATS_H
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef struct hr_stats {
    int32_t n_layer, n_ff;
    uint64_t n_tokens;   /* tokens the counts were taken over */
    uint32_t *counts;    /* [n_layer][n_ff]; counts[l * n_ff + j] <= n_tokens */
    float *recall;       /* [n_layer] or NULL: predictor recall on held-out pairs */
    float *precision;    /* [n_layer] or NULL */
    uint32_t *rank;      /* [n_layer] or NULL: predictor rank chosen per layer */
    char model[256];     /* file name of the model (informative; may be empty) */
} hr_stats;

/* Allocates zeroed counts (and no optional arrays) for n_layer x n_ff. */
int hr_stats_init(hr_stats *s, int32_t n_layer, int32_t n_ff, hr_err *e);
/* Reads and validates a stats file: every count <= n_tokens, one act_count tensor per
 * layer of shape {n_ff}, optional arrays of length n_layer. On error *out is zeroed
 * and the message names the file and the problem. */
int hr_stats_read(const char *path, hr_stats *out, hr_err *e);
int hr_stats_write(const char *path, const hr_stats *s, hr_err *e);
void hr_stats_free(hr_stats *s);
/* The statistics path that belongs to a model file: "x.gguf" -> "x.stats.gguf", any other
 * name gets ".stats.gguf" appended. Returns -1 if cap is too small. */
int hr_stats_path(const char *model_path, char *buf, size_t cap);

#endif
