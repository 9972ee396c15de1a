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

/* ---- whole-model placement (place_model.c): budget accounting, statistics, solve, write ---- */

/* The model's shape, as the engine reports it (hearth_model_info). */
typedef struct hr_place_shape {
    int32_t n_layer, n_ff, n_embd, n_head, n_head_kv, head_dim, n_vocab;
} hr_place_shape;

/* Tokens whose activations the scratch estimate holds at once (a GPU micro-batch). */
#define HR_PLACE_SCRATCH_TOKENS 32

/* What must be on the GPU before any FFN neuron, in order of value (vram.c). */
typedef struct hr_vram_fixed {
    uint64_t attn;      /* attention matrices (q, k, v, output, fused qkv) and their biases, all layers */
    uint64_t predictor; /* fc1, fc2 */
    uint64_t norms;     /* every norm weight and bias */
    uint64_t output;    /* output matrix (token_embd when tied) */
    uint64_t other;     /* other per-layer tensors that are not per neuron (FFN down bias, router) */
    uint64_t kv;        /* F16 K and V for n_ctx tokens: 2 * n_layer * n_ctx * n_head_kv * head_dim * 2 */
    uint64_t scratch;   /* 4 * T * (3 n_embd + n_head head_dim + 2 n_head_kv head_dim + n_head n_ctx
                           + 4 n_ff + n_vocab), T = HR_PLACE_SCRATCH_TOKENS */
    uint64_t total;
} hr_vram_fixed;

/* Fixed bytes and per-layer neuron bytes (n_layer entries) from the file's tensors. */
int hr_vram_account(const gguf_file *f, const hr_place_shape *s, int32_t n_ctx, hr_vram_fixed *fixed,
                    uint64_t *neuron_bytes, hr_err *e);

typedef struct hr_place_params {
    const char *model_path;
    const char *stats_path; /* NULL: <model>.stats.gguf */
    const char *out_path;   /* NULL: <model>.generated.gpuidx */
    double vram_budget_gib;
    int32_t n_ctx;          /* tokens of KV cache to reserve (> 0) */
    int32_t group;          /* >= 1 */
} hr_place_params;

typedef struct hr_place_result {
    hr_place_shape shape;
    int32_t n_ctx, group;
    uint64_t budget;        /* bytes */
    hr_vram_fixed fixed;
    uint64_t neuron_budget; /* budget - fixed.total */
    uint64_t neuron_used;   /* bytes of the placed neurons (stored as split.vram_capacity) */
    uint64_t ffn_bytes;     /* bytes of every neuron of every layer */
    uint64_t *neuron_bytes; /* [n_layer] */
    hr_place_layer *layers; /* [n_layer] */
    uint64_t n_tokens;      /* tokens the statistics were taken over */
    char *stats_path, *out_path;
} hr_place_result;

int hr_place_model(const hr_place_params *p, const hr_place_shape *shape, hr_place_result *r, hr_err *e);
void hr_place_result_free(hr_place_result *r);

#endif
