/* Element-wise transcendental functions written so the compiler vectorizes their loops:
 * libm's tanhf is a call per element, and Gemma soft-caps every output logit (32k-256k per
 * token) and every attention score with it. */
#ifndef HR_VMATH_H
#define HR_VMATH_H
#include <stdbool.h>
#include <stdint.h>

/* y[i] = tanh(x[i] * pre) * post over n elements (in place allowed). Within 4 ulp of the
 * correctly rounded tanh for every finite input (tests/cpu/test_vmath.c measures it); NaN
 * stays NaN, +-Inf gives +-post. */
void hr_vtanh_scaled(float *y, const float *x, int64_t n, float pre, float post);
/* h[i] = gelu(g[i]) * u[i] (gelu(u[i]) when g is NULL) with GELU read from a table of
 * hr_gelu_table_init: ggml's GELU bit for bit (0 at or below -10, the input at or above 10;
 * NaN stays NaN). */
void hr_vgelu_tab(float *h, const float *g, const float *u, int64_t n, const uint16_t *tab);

/* h[i] = silu(g[i]) * u[i] (SwiGLU), silu(v) = v / (1 + e^-v) from vmath's exp: within 4 ulp
 * of the correctly rounded silu (tests/cpu/test_vmath.c measures it); h may be g, not u. */
void hr_vswiglu(float *h, const float *g, const float *u, int64_t n);
/* y[i] = |silu(g[i])|, the same silu: threshold mode's magnitudes of act(gate·x), so the mask
 * and the calibration histograms see what the FFN computes (y may be g). */
void hr_vsilu_abs(float *y, const float *g, int64_t n);

/* h[i] = relu(g[i]) * u[i], or relu(g[i]) * relu(u[i]) with relu_u (ReGLU, dReLU), relu(v) =
 * v > 0 ? v : 0 (NaN and -0 give +0); h may be g (in place), not u. Plain C that the compiler
 * vectorizes: ops.c's element-by-element values bit for bit. */
void hr_vrelu_glu(float *h, const float *g, const float *u, int64_t n, bool relu_u);

/* x[i] = exp(x[i] - m) for x[i] <= m (a softmax's shifted scores), returning their sum in
 * double: 8 partial sums, element i into sum i % 8, added pairwise at the end. Within 3 ulp
 * of expf above e^-87 (tests/cpu/test_vmath.c measures it), 0 below, where a probability no
 * longer counts; NaN stays NaN. */
double hr_vexp_sum(float *x, int64_t n, float m);

/* y[i] = hr_f32_to_f16(x[i]) (round to nearest even, NaN to the quiet NaN 0x7e00 with x's
 * sign), and x[i] rounded to F16 and back in place: attention's cache stores and its
 * probabilities (a call per element where a decode step at depth 1000 has 130 thousand). */
void hr_vto_f16(uint16_t *y, const float *x, int64_t n);
void hr_vround_f16(float *x, int64_t n);

/* The plain-C versions and their AVX2 + F16C twins (x86 builds; call the twins only where
 * the CPU has AVX2 and F16C): each element equal bit for bit; the entry points above pick
 * one at run time. */
void hr_vtanh_scaled_c(float *y, const float *x, int64_t n, float pre, float post);
void hr_vgelu_tab_c(float *h, const float *g, const float *u, int64_t n, const uint16_t *tab);
void hr_vtanh_scaled_avx2(float *y, const float *x, int64_t n, float pre, float post);
void hr_vgelu_tab_avx2(float *h, const float *g, const float *u, int64_t n, const uint16_t *tab);
void hr_vswiglu_c(float *h, const float *g, const float *u, int64_t n);
void hr_vswiglu_avx2(float *h, const float *g, const float *u, int64_t n);
void hr_vsilu_abs_c(float *y, const float *g, int64_t n);
void hr_vsilu_abs_avx2(float *y, const float *g, int64_t n);
double hr_vexp_sum_c(float *x, int64_t n, float m);
double hr_vexp_sum_avx2(float *x, int64_t n, float m);
void hr_vto_f16_c(uint16_t *y, const float *x, int64_t n);
void hr_vround_f16_c(float *x, int64_t n);
void hr_vto_f16_avx2(uint16_t *y, const float *x, int64_t n);
void hr_vround_f16_avx2(float *x, int64_t n);

/* ggml's F16 GELU table: entry h is the F16 bits of gelu(f16 value h), the tanh
 * approximation evaluated in float with libm's tanhf and rounded to F16, as ggml builds its
 * table; so a lookup equals ggml's GELU bit for bit. 65536 entries. */
#define HR_GELU_TABLE_SIZE 65536
void hr_gelu_table_init(uint16_t *tab);
#endif
