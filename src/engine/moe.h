/* Mixture-of-experts FFN layers (Mixtral-style llama, qwen3moe, smallthinker, gpt-oss).
 *
 * A router (ffn_gate_inp {n_embd, n_expert}, plus its bias where the entry has moe_bias)
 * scores the experts of each token; the gating of the architecture's entry (softmax, or
 * sigmoid where the file's expert_gating_func says) turns the scores into probabilities, the
 * n_expert_used most probable experts are chosen (ties: the lower id), their probabilities
 * renormalised to sum 1 where the entry says so (llama.cpp's norm_w), and the token's output
 * is the weighted sum of the chosen experts' FFNs, summed in rank order (most probable first)
 * as llama.cpp's graph adds them. gpt-oss (HR_MOE_SOFTMAX_WEIGHT) chooses on the raw scores
 * and weights the chosen by a softmax over theirs; its experts add a bias after each product
 * and compute the clamped SwiGLU of ops_oai.h.
 *
 * Experts are used in place from the 3-D tensors ffn_{gate,up,down}_exps: hr_moe_weights
 * holds expert 0's matrix, expert e's rows follow at data + e * n_out * row_bytes.
 *
 * A batch groups its tokens by expert: one matrix-matrix product per used expert over the
 * tokens routed to it (decode: one matrix-vector product per chosen expert), results
 * scattered back. Each token's output is bit-identical to computing it alone: the products
 * are row-independent and the per-token sum has a fixed order.
 *
 * --ffn exact (ReGLU/dReLU experts, SmallThinker): each used expert's gate is computed in full
 * for its tokens; up only for the union of the neurons whose gate fires (gathered rows, equal
 * to the full product's row for row). Files with ffn_down_exps_t (hearth calibrate writes
 * them) project down with the sparse axpy over the firing neurons' rows only, in both modes
 * (it skips zero activations), so exact equals dense bit for bit; files with only
 * ffn_down_exps feed the activations, zero elsewhere, to the dense down product, which reads
 * every column: then only up is saved. Either way the output stays batch-independent. The FFN
 * counters (hearth_ctx_ffn_stats) count over the chosen experts' neurons; routing counts per
 * layer and expert: hearth_ctx_moe_routed.
 *
 * --ffn predicted (files where hearth calibrate wrote expert predictors, blk.N.fc1_exps.E and
 * fc2_exps.E): a chosen expert with a predictor scores its neurons from its input
 * (fc2 . relu(fc1 . x) >= the sparse threshold, 0 by default), computes the gate only for the
 * predicted ones, then proceeds as exact mode; experts without one run exact. Per-expert
 * predicted/firing counts with ffn_stats: hearth_ctx_moe_pred_stats. */
#ifndef HR_MOE_H
#define HR_MOE_H
#include "context.h"

/* Expert e's matrix inside the 3-D tensor whose expert 0 is w. */
static inline hr_mat hr_moe_expert(const hr_mat *w, int32_t e) {
    hr_mat v = *w;
    v.data = (const uint8_t *)w->data + (size_t)e * (size_t)w->n_out * w->row_bytes;
    return v;
}

/* Whether some layer of m has predictors inside its experts (--ffn predicted). */
bool hr_moe_has_predictors(const hearth_model *m);

/* Bytes of one expert's three matrices. */
uint64_t hr_moe_expert_bytes(const hr_moe_weights *w);

/* Loads layer il's router and expert tensors (shape {.., .., n_expert} checked). */
int hr_load_moe(const hearth_model *m, int il, hr_moe_weights *w, hr_err *e);

/* Context workspace, sized for n_batch tokens; no-ops for dense models. */
int hr_moe_ctx_init(hearth_ctx *c, hr_err *e);
void hr_moe_ctx_free(hearth_ctx *c);

/* Architectures whose router reads the layer input (smallthinker): scores the experts from
 * x before attention changes it. Does nothing for other layers. */
int hr_moe_route_early(hearth_ctx *c, const hr_layer *L, const float *x, int32_t n, hr_err *e);

/* out[n][n_embd] = the MoE FFN of xn[n][n_embd] (ffn_norm's output). */
int hr_moe_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *xn, int32_t n, float *out, hr_err *e);

/* Calibration (hearth calibrate's expert predictors): called in dense mode for each used
 * expert x of layer il with its group's cnt inputs xin [cnt][n_embd] (ffn_norm's output, what
 * the expert and its predictor read) and activations act [cnt][n_ff_exp] (0: not firing). */
typedef void (*hr_moe_observer)(void *ud, int il, int32_t x, int32_t cnt, const float *xin, const float *act);
int hr_moe_set_observer(hearth_ctx *c, hr_moe_observer fn, void *ud, hr_err *e);

/* Calibration: from now on count, per layer, expert and neuron, the tokens on which the
 * neuron fired (ReLU-family experts; dense and exact mode alike). */
int hr_moe_count_neurons(hearth_ctx *c, hr_err *e);
/* Layer il's counts [n_expert][n_ff_exp], or NULL (not counting, dense model, bad il). */
const uint32_t *hr_moe_neuron_counts(const hearth_ctx *c, int il);

/* Routing of the last call for layer il (tests): token t's chosen experts in rank order and
 * their weights, n_expert_used each. */
const int32_t *hr_moe_last_experts(const hearth_ctx *c);
const float *hr_moe_last_weights(const hearth_ctx *c);
#endif
