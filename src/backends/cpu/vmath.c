#include "vmath.h"
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include "formats/types.h"

static inline float bits_f(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

/* exp(y) for y in [0, 20]: y = k ln2 + r with |r| <= ln2/2 (ln2 split in two so k ln2 is
 * exact), e^r by its Taylor series to r^7 (error below 6e-9 relative), 2^k from the bits. */
static inline float exp_0_20(float y) {
    const float k = (y * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    const float r = (y - k * 0.693145751953125f) - k * 1.428606765330187045e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * bits_f((uint32_t)((int32_t)k + 127) << 23);
}

/* tanh: below 0.5 its odd Taylor series to x^15 (next term below 1e-8 relative); above,
 * 1 - 2 / (e^2a + 1), which loses little there (2 / (e^2a + 1) < 1.2 tanh); from 9.1 on tanh
 * rounds to 1 in float, so a is capped at 10. Branch-free so the loop vectorizes. */
static inline float tanh_one(float x) {
    const float a0 = fabsf(x);
    const float a = a0 < 10.0f ? a0 : 10.0f; /* NaN takes 10 here; restored below */
    const float big = 1.0f - 2.0f / (exp_0_20(2.0f * a) + 1.0f);
    const float s = a * a;
    float q = -929569.0f / 638512875.0f;
    q = q * s + 21844.0f / 6081075.0f;
    q = q * s + -1382.0f / 155925.0f;
    q = q * s + 62.0f / 2835.0f;
    q = q * s + -17.0f / 315.0f;
    q = q * s + 2.0f / 15.0f;
    q = q * s + -1.0f / 3.0f;
    const float small = a + a * s * q;
    const float t = copysignf(a < 0.5f ? small : big, x);
    return x == x ? t : x;
}

/* exp(y) for y <= 0: exp_0_20's reduction and series (2^k a normal number down to y = -87),
 * 0 below -87, NaN kept. Branch-free so the loop vectorizes. */
static inline float exp_neg(float y) {
    const float c = y > -87.0f ? y : -87.0f; /* NaN takes -87 here; restored below */
    const float e = exp_0_20(c);
    const float z = y > -87.0f ? e : 0.0f;
    return y == y ? z : y;
}

double hr_vexp_sum_c(float *x, int64_t n, float m) {
    double acc[8] = {0};
    for (int64_t i = 0; i < n; i++) {
        x[i] = exp_neg(x[i] - m);
        acc[i % 8] += (double)x[i];
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void hr_vtanh_scaled_c(float *y, const float *x, int64_t n, float pre, float post) {
    for (int64_t i = 0; i < n; i++) y[i] = tanh_one(x[i] * pre) * post;
}

/* The twin an entry point runs: the AVX2 + F16C one (vmath_avx2.c, bit for bit the same values)
 * where the CPU has them (x86 builds), else the plain C one. */
#if defined(HR_X86)
static bool have_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"); }
#define PICK(f) (have_avx2() ? f##_avx2 : f##_c)
#else
#define PICK(f) f##_c
#endif

void hr_vtanh_scaled(float *y, const float *x, int64_t n, float pre, float post) {
    PICK(hr_vtanh_scaled)(y, x, n, pre, post);
}

/* GELU from the table: outside [-10, 10] 0 or the identity, as ggml. */
static inline float gelu_tab(float v, const uint16_t *tab) {
    if (v <= -10.0f) return 0.0f;
    if (v >= 10.0f) return v;
    return hr_f16_to_f32(tab[hr_f32_to_f16(v)]);
}

void hr_vgelu_tab_c(float *h, const float *g, const float *u, int64_t n, const uint16_t *tab) {
    for (int64_t i = 0; i < n; i++) h[i] = g ? gelu_tab(g[i], tab) * u[i] : gelu_tab(u[i], tab);
}

/* silu(v) = v / (1 + e^-v), with e = e^-|v| from exp_neg (never overflows): v / (1 + e) for
 * v >= 0, v e / (1 + e) below. NaN stays NaN; +Inf gives +Inf; -Inf gives NaN, as
 * -Inf / (1 + expf(Inf)) does. Branch-free so the loop vectorizes. */
static inline float silu_one(float v) {
    const float e = exp_neg(-fabsf(v));
    const float num = v >= 0 ? v : v * e;
    return num / (1.0f + e);
}

void hr_vswiglu_c(float *h, const float *g, const float *u, int64_t n) {
    if (h == g)
        for (int64_t i = 0; i < n; i++) h[i] = silu_one(h[i]) * u[i];
    else
        for (int64_t i = 0; i < n; i++) h[i] = silu_one(g[i]) * u[i];
}

void hr_vsilu_abs_c(float *y, const float *g, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = fabsf(silu_one(g[i]));
}

/* relu(v) = v > 0 ? v : 0, ops.c's: NaN and -0 give +0. */
static inline float relu_v(float v) { return v > 0 ? v : 0.0f; }

/* Four loops so that each is one the vectorizer takes: in place (h == g) there is one input
 * pointer besides h, and the choice between relu(u) and u is not made per element. */
void hr_vrelu_glu(float *h, const float *g, const float *u, int64_t n, bool relu_u) {
    if (h == g && relu_u)
        for (int64_t i = 0; i < n; i++) h[i] = relu_v(h[i]) * relu_v(u[i]);
    else if (h == g)
        for (int64_t i = 0; i < n; i++) h[i] = relu_v(h[i]) * u[i];
    else if (relu_u)
        for (int64_t i = 0; i < n; i++) h[i] = relu_v(g[i]) * relu_v(u[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = relu_v(g[i]) * u[i];
}

double hr_vexp_sum(float *x, int64_t n, float m) {
    return PICK(hr_vexp_sum)(x, n, m);
}

void hr_vswiglu(float *h, const float *g, const float *u, int64_t n) {
    PICK(hr_vswiglu)(h, g, u, n);
}

void hr_vsilu_abs(float *y, const float *g, int64_t n) {
    PICK(hr_vsilu_abs)(y, g, n);
}

void hr_vgelu_tab(float *h, const float *g, const float *u, int64_t n, const uint16_t *tab) {
    PICK(hr_vgelu_tab)(h, g, u, n, tab);
}

void hr_vto_f16_c(uint16_t *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = hr_f32_to_f16(x[i]);
}

void hr_vround_f16_c(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_f16_to_f32(hr_f32_to_f16(x[i]));
}

void hr_vto_f16(uint16_t *y, const float *x, int64_t n) {
    PICK(hr_vto_f16)(y, x, n);
}

void hr_vround_f16(float *x, int64_t n) {
    PICK(hr_vround_f16)(x, n);
}

void hr_gelu_table_init(uint16_t *tab) {
    for (uint32_t h = 0; h < HR_GELU_TABLE_SIZE; h++) {
        const float v = hr_f16_to_f32((uint16_t)h);
        const float g = 0.5f * v * (1.0f + tanhf(0.79788456080286535587989211986876f * v * (1.0f + 0.044715f * v * v)));
        tab[h] = hr_f32_to_f16(g);
    }
}
