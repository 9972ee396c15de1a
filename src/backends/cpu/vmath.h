/* Element-wise transcendental functions written so the compiler vectorizes their loops:
 * libm's tanhf is a call per element, and Gemma soft-caps every output logit (32k-256k per
 * token) and every attention score with it. */
#ifndef HR_VMATH_H
#define HR_VMATH_H
#include <stdint.h>

/* y[i] = tanh(x[i] * pre) * post over n elements (in place allowed). Within 4 ulp of the
 * correctly rounded tanh for every finite input (tests/cpu/test_vmath.c measures it); NaN
 * stays NaN, +-Inf gives +-post. */
void hr_vtanh_scaled(float *y, const float *x, int64_t n, float pre, float post);

/* ggml's F16 GELU table: entry h is the F16 bits of gelu(f16 value h), the tanh
 * approximation evaluated in float with libm's tanhf and rounded to F16, as ggml builds its
 * table; so a lookup equals ggml's GELU bit for bit. 65536 entries. */
#define HR_GELU_TABLE_SIZE 65536
void hr_gelu_table_init(uint16_t *tab);
#endif
