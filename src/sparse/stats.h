/* Activation statistics (docs/stats-format.md): per layer and neuron, the number of
 * tokens on which the neuron fired, plus optional predictor quality figures. Written by
 * `hearth calibrate` beside the model as <model>.stats.gguf, read by `hearth place`.
 * Mixtures of experts (n_expert > 0): per layer, the tokens routed to each expert, and for
 * ReLU-family experts per expert and neuron the routed tokens on which it fired. */
#ifndef HR_STATS_H
#define HR_STATS_H
#include <stdbool.h>
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
    /* Mixtures of experts: n_expert 0 for dense models. Then counts is [n_layer][n_expert][n_ff]
     * (n_ff = n_ff_exp; counts[(l * n_expert + x) * n_ff + j] <= expert_counts[l * n_expert + x]),
     * or NULL where the experts are not ReLU-family (nothing to count). */
    int32_t n_expert, n_expert_used;
    uint32_t *expert_counts; /* [n_layer][n_expert] tokens routed to each expert; each layer sums to n_tokens * n_expert_used */
} hr_stats;

/* Allocates zeroed counts (and no optional arrays) for n_layer x n_ff. */
int hr_stats_init(hr_stats *s, int32_t n_layer, int32_t n_ff, hr_err *e);
/* Reads and validates a stats file: every count <= n_tokens, one act_count tensor per
 * layer of shape {n_ff}, optional arrays of length n_layer. On error *out is zeroed
 * and the message names the file and the problem. Refuses the statistics of a mixture of
 * experts (its readers place dense FFNs). */
int hr_stats_read(const char *path, hr_stats *out, hr_err *e);
/* Mixtures of experts too: allocates expert_counts [n_layer][n_expert] and counts
 * [n_layer][n_expert][n_ff] (neuron counts: pass false for experts without them). */
int hr_stats_init_moe(hr_stats *s, int32_t n_layer, int32_t n_expert, int32_t n_expert_used, int32_t n_ff, bool neurons, hr_err *e);
/* hr_stats_read for dense and mixture-of-experts statistics; expert_counts and counts
 * validated against each other (docs/stats-format.md). */
int hr_stats_read_any(const char *path, hr_stats *out, hr_err *e);
int hr_stats_write(const char *path, const hr_stats *s, hr_err *e);
void hr_stats_free(hr_stats *s);
/* The statistics path that belongs to a model file: "x.gguf" -> "x.stats.gguf", any other
 * name gets ".stats.gguf" appended. Returns -1 if cap is too small. */
int hr_stats_path(const char *model_path, char *buf, size_t cap);

#endif
