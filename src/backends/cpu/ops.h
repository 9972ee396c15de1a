/* Element-wise and per-row operations of the forward pass, with llama.cpp's numerics
 * (double accumulation in RMSNorm and softmax sums, iterative float RoPE angles). */
#ifndef HR_OPS_H
#define HR_OPS_H
#include <stdbool.h>
#include <stdint.h>

/* FFN activations. GELU is ggml's: tanh approximation looked up through F16. GEGLU is
 * gelu(gate) * up, Gemma's gated FFN (ggml's geglu: the same F16-rounded GELU times up);
 * GELU with a gate computes the same, GEGLU only says the gate is required. Appended: the
 * order is the device contract's (device.h ffn_act). */
typedef enum hr_act { HR_ACT_SWIGLU = 0, HR_ACT_REGLU, HR_ACT_DRELU, HR_ACT_RELU, HR_ACT_GELU, HR_ACT_GEGLU } hr_act;
#define HR_ACT_COUNT 6
/* The activation as the device's ffn_act knows it: GEGLU is GELU with a gate there. */
static inline hr_act hr_act_device(hr_act a) { return a == HR_ACT_GEGLU ? HR_ACT_GELU : a; }

/* y = x / rms(x) * w over n elements. */
void hr_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps);
/* y = (x - mean) / sqrt(var + eps) * w + b (b may be NULL). */
void hr_layernorm(float *y, const float *x, const float *w, const float *b, int64_t n, float eps);
/* YaRN's part of ggml's RoPE: ext_factor 0 is none (angles freq_scale * theta); otherwise
 * pair k mixes the interpolated and extrapolated angle by a ramp over corr_dims. Every
 * rotation is scaled by attn_factor (and, with YaRN, by 1 + 0.1 ln(1 / freq_scale)). */
typedef struct hr_rope_yarn {
    float ext_factor, attn_factor, corr_dims[2];
} hr_rope_yarn;
/* Rotates n_rot dims of each of n_heads heads (head_dim apart) at position pos, with
 * per-pair frequency divisors freq_factors[n_rot/2] (Llama-3.1 rope_freqs, LongRoPE's
 * long/short factors; NULL for none) and YaRN (NULL for none). */
void hr_rope_ext(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, int32_t pos, float base, float freq_scale,
                 bool neox, const float *freq_factors, const hr_rope_yarn *yarn);
/* hr_rope_ext in two steps, so that one position's cos/sin pairs (cs[n_rot]) serve several
 * tensors (a token's q and k): the same values. */
void hr_rope_cs(float *cs, int32_t n_rot, int32_t pos, float base, float freq_scale, const float *freq_factors,
                const hr_rope_yarn *yarn);
void hr_rope_apply(float *x, int32_t n_heads, int32_t head_dim, int32_t n_rot, bool neox, const float *cs);
/* In place softmax of x[0..n) after scaling by s; returns nothing (entries beyond n untouched). */
void hr_softmax(float *x, int64_t n, float s);
/* The same with a sink: the denominator also holds exp(sink), so the weights sum to less than
 * 1 by the sink's share (gpt-oss's per-head attention sinks). The sink is not scaled and
 * joins the maximum; -inf gives hr_softmax. */
void hr_softmax_sink(float *x, int64_t n, float s, float sink);
/* h[i] = act(g[i]) * u[i] (or act(u[i]) when g is NULL; dReLU: relu(g) * relu(u)).
 * SwiGLU, ReGLU and dReLU need g. */
void hr_ffn_act(float *h, const float *g, const float *u, int64_t n, hr_act act);
/* The same with GELU read from a table of hr_gelu_table_init (vmath.h; NULL: computed):
 * equal bit for bit, without a tanhf per element. */
void hr_ffn_act_tab(float *h, const float *g, const float *u, int64_t n, hr_act act, const uint16_t *gelu_table);
/* out[i] = |act(g[i])|, the activation of the gate alone (SiLU, GELU computed as
 * hr_ffn_act does, ReLU for the ReLU family and dReLU's gate): the magnitude FFN mode
 * threshold compares, one definition for the host and the stand-in device. */
void hr_gate_mag(float *out, const float *g, int64_t n, hr_act act);
/* x[i] = cap * tanh(x[i] * (1 / cap)) over n elements (Gemma's soft-capping of attention
 * scores and output logits, in ggml's order: scale by 1/cap, tanh, scale by cap), with
 * vmath.h's vectorized tanh (within 4 ulp of libm's). */
void hr_softcap(float *x, int64_t n, float cap);
#endif
