/* The two operations gpt-oss brings (llama.cpp's openai-moe graph): OpenAI's clamped SwiGLU
 * of its experts, and the softmax of attention scores with a per-head sink logit. Scalar, as
 * ggml's CPU versions are: both are a few exps per element next to the matrix products. */
#ifndef HR_OPS_OAI_H
#define HR_OPS_OAI_H
#include <stdint.h>

/* h[i] = x * sigmoid(alpha * x) * (y + 1) with x = min(g[i], limit) and
 * y = clamp(u[i], -limit, limit), over n elements (h may equal g or u). */
void hr_swiglu_oai(float *h, const float *g, const float *u, int64_t n, float alpha, float limit);

/* In place softmax of x[0..n) * s whose denominator also holds exp(sink): the weights sum to
 * less than 1 by the sink's share. The sink is not scaled and joins the maximum. */
void hr_softmax_sink(float *x, int64_t n, float s, float sink);
#endif
