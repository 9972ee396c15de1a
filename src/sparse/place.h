/* Hot-neuron placement: which FFN neurons live on the GPU under a VRAM budget.
 *
 * The objective is the number of activations the GPU serves: sum over hot neurons of their
 * activation counts. Neurons of one layer all cost the same bytes, so within a layer the
 * hottest come first; across layers units are taken greedily by activations per byte. When
 * every layer's neurons cost the same (one weight type throughout) this greedy is optimal;
 * otherwise it is within one unit's value of the optimum (the fractional-knapsack bound). */
#ifndef HR_PLACE_H
#define HR_PLACE_H
#include <stdint.h>
#include "gpuidx.h"
#include "util/err.h"

typedef struct hr_place_problem {
    int32_t n_layer, n_ff;
    const uint32_t *counts;       /* [n_layer][n_ff] activation counts */
    const uint64_t *neuron_bytes; /* [n_layer] GPU bytes of one neuron of the layer (> 0) */
    uint64_t budget;              /* bytes available for neurons */
    int32_t group;                /* placement unit: the N hottest of a layer, the next N, ... (>= 1) */
} hr_place_problem;

typedef struct hr_place_layer {
    int32_t n_hot;
    uint64_t bytes;       /* n_hot * neuron_bytes */
    uint64_t hot_count;   /* activations the GPU serves */
    uint64_t total_count; /* all activations of the layer */
} hr_place_layer;

/* Fills out (zeroed by the caller with hr_gpuidx_init of the same shape) and, when
 * layers is non-NULL, the per-layer summary (n_layer entries). */
int hr_place_solve(const hr_place_problem *p, hr_gpuidx *out, hr_place_layer *layers, hr_err *e);

/* ---- whole-model placement (place_model.c): statistics, solve, write ---- */

/* The budget and the neuron sizes come from the caller (hearth place takes them from the
 * engine's GPU plan, hearth_gpu_plan_budget), so the index is the one hybrid execution
 * with the same parameters reads. */
typedef struct hr_place_params {
    const char *model_path;
    const char *stats_path;       /* NULL: <model>.stats.gguf */
    const char *out_path;         /* NULL: <model>.generated.gpuidx */
    int32_t n_layer, n_ff;
    const uint64_t *neuron_bytes; /* [n_layer] GPU bytes of one neuron of the layer (> 0) */
    uint64_t neuron_budget;       /* bytes for neurons; stored as split.vram_capacity (PowerInfer's meaning) */
    int32_t group;                /* >= 1 */
} hr_place_params;

typedef struct hr_place_result {
    int32_t n_layer, n_ff, group;
    uint64_t neuron_budget;
    uint64_t neuron_used;   /* bytes of the placed neurons (<= neuron_budget) */
    uint64_t ffn_bytes;     /* bytes of every neuron of every layer */
    hr_place_layer *layers; /* [n_layer] */
    uint64_t n_tokens;      /* tokens the statistics were taken over */
    char *stats_path, *out_path;
} hr_place_result;

int hr_place_model(const hr_place_params *p, hr_place_result *r, hr_err *e);
void hr_place_result_free(hr_place_result *r);

#endif
