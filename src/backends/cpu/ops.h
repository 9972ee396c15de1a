/* Element-wise and per-row operations of the forward pass, with llama.cpp's numerics
 * (double accumulation in RMSNorm and softmax sums, iterative float RoPE angles). */
#ifndef HR_OPS_H
#define HR_OPS_H
#include <stdbool.h>
#include <stdint.h>

/* FFN activations. GELU is ggml's: tanh approximation looked up through F16. */
typedef enum hr_act { HR_ACT_SWIGLU = 0, HR_ACT_REGLU, HR_ACT_DRELU, HR_ACT_RELU, HR_ACT_GELU } hr_act;
#define HR_ACT_COUNT 5

/* y = x / rms(x) * w over n elements. */
void hr_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps);
/* y = (x - mean) / sqrt(var + eps) * w + b (b may be NULL). */
void hr_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n, float eps);
/* Rotates n_rot dims of each of n_heads heads (head_dim apart) at position pos. */
void hr_rope(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int32_t pos, float base, float freq_scale, bool neox);
/* In place softmax of x[0..n) after scaling by s; returns nothing (entries beyond n untouched). */
void hr_softmax(float *x, int64_t n, float s);
/* h[i] = act(g[i]) * u[i] (or act(u[i]) when g is NULL; dReLU: relu(g) * relu(u)).
 * SwiGLU, ReGLU and dReLU need g. */
void hr_ffn_act(float *h, const float *g, const float *u, int64_t n, hr_act act);
#endif
