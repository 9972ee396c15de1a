/* The FFN of one layer, in the context's mode:
 *   dense      every neuron;
 *   exact      the gate (or up, without a gate) fully, then up and down only for neurons
 *              whose activation is non-zero: same output as dense for ReLU-family FFNs;
 *   predicted  the layer's predictor chooses the neurons (PowerInfer's mode).
 * x is the residual stream before ffn_norm (the predictor's input), xn the normed input. */
#ifndef HR_FFN_H
#define HR_FFN_H
#include "context.h"

int hr_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *x, const float *xn, int32_t n, float *out, hr_err *e);
#endif
