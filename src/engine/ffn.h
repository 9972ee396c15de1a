/* The FFN of one layer, in the context's mode:
 *   dense      every neuron;
 *   exact      the gate (or up, without a gate) fully, then up and down only for neurons
 *              whose activation is non-zero: same output as dense for ReLU-family FFNs;
 *   predicted  the layer's predictor chooses the neurons (PowerInfer's mode);
 *   threshold  the gate fully, then up and down only for neurons whose |act(gate)| is above
 *              the layer's threshold (gated FFNs; threshold 0 equals dense for SwiGLU).
 * x is the residual stream before ffn_norm (the predictor's input), xn the normed input. */
#ifndef HR_FFN_H
#define HR_FFN_H
#include "context.h"

/* FFN mode threshold's per-layer key: an F32 array, one bound on |act(gate·x)| per layer. */
#define HR_KEY_FFN_THRESHOLD "hearth.ffn_threshold"

/* out[i] = |act(g[i])|, the magnitude FFN mode threshold compares (silu for SwiGLU, GELU for
 * GEGLU, relu for the ReLU family); calibration measures the same quantity. */
void hr_ffn_gate_mag(float *out, const float *g, int64_t n, hr_act act, const uint16_t *gelu_tab);
/* The gate product [n_tok][n_ff] of the FFN just computed: valid inside the ffn_observer
 * (dense mode, CPU), where calibration reads it. */
const float *hr_ffn_last_gate(const hearth_ctx *c);
/* --stats of predicted mode on a file with thresholds (ffn_threshold.c): counts as fired the
 * neurons above layer il's bound (what threshold mode computes) and those of them computed. */
int hr_ffn_thr_count_fired(hearth_ctx *c, const hr_ffn_weights *f, int il, const float *xn, int32_t n, hr_err *e);

/* The FFN with the device share d (hybrid.h: predictor, hot neurons or the whole FFN on the
 * device, what an earlier step of the layer left there); a layer's step names d. */
struct hr_ffn_dev;
int hr_ffn_dev_run(hearth_ctx *c, const hr_layer *L, int il, const float *x, const float *xn, int32_t n,
                   const struct hr_ffn_dev *d, float *out, hr_err *e);
/* The FFN with the device share the plan gives layer il (none without a device). */
int hr_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *x, const float *xn, int32_t n, float *out, hr_err *e);
#endif
