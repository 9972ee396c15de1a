/* The operation gpt-oss brings (llama.cpp's openai-moe graph): OpenAI's clamped SwiGLU of its
 * experts. Scalar, as ggml's CPU version is: a few exps per element next to the matrix
 * products. Its attention's softmax with a sink is hr_softmax_sink (ops.h). */
#ifndef HR_OPS_OAI_H
#define HR_OPS_OAI_H
#include <stdint.h>

/* h[i] = x * sigmoid(alpha * x) * (y + 1) with x = min(g[i], limit) and
 * y = clamp(u[i], -limit, limit), over n elements (h may equal g or u). */
void hr_swiglu_oai(float *h, const float *g, const float *u, int64_t n, float alpha, float limit);
#endif
