/* Plain-C reference kernels: the twins every SIMD variant is tested against. */
#include <math.h>
#include <string.h>

#include "kernels_impl.h"
#include "attn_v.h"

static void prep_f32(const float *x, void *xq, int64_t n) { memcpy(xq, x, (size_t)n * 4); }

void hr_prep_f16_scalar(const float *x, void *xq, int64_t n) {
    uint16_t *h = xq;
    for (int64_t i = 0; i < n; i++) h[i] = hr_f32_to_f16(x[i]);
}

void hr_prep_bf16_scalar(const float *x, void *xq, int64_t n) {
    uint16_t *h = xq;
    for (int64_t i = 0; i < n; i++) h[i] = hr_f32_to_bf16(x[i]);
}

/* One 32-element block as llama.cpp's x86 quantize_row_q8_0 (not the _ref one) quantizes
 * it: id = 127/amax (not 1/d) and ties round to even. Returns d = amax/127 unrounded (Q8_1
 * derives its sum term from it). */
float hr_q8_block_scalar(const float *x, int8_t qs[HR_QK]) {
    float amax = 0.0f;
    for (int j = 0; j < HR_QK; j++) {
        float a = fabsf(x[j]);
        amax = a > amax ? a : amax;
    }
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    for (int j = 0; j < HR_QK; j++) {
        float r = hr_round_even(x[j] * id);
        /* NaN (from NaN weights) as the SIMD twin's cvtps gives it: INT_MIN, saturated. */
        qs[j] = (int8_t)(r > 127.f ? 127 : r < -128.f || r != r ? -128 : (int)r);
    }
    return amax / 127.f;
}

void hr_prep_q8_0_scalar(const float *x, void *xq, int64_t n) {
    hr_block_q8_0 *y = xq;
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) y[i].d = hr_f32_to_f16(hr_q8_block_scalar(x, y[i].qs));
}

static void dot_f32(int64_t n, float *s, const void *w, const void *x) {
    const float *a = w, *b = x;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(a[i] * b[i]);
    *s = (float)sum;
}

static void dot_f16(int64_t n, float *s, const void *w, const void *x) {
    const uint16_t *a = w, *b = x;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(hr_f16_to_f32(a[i]) * hr_f16_to_f32(b[i]));
    *s = (float)sum;
}

static void dot_bf16(int64_t n, float *s, const void *w, const void *x) {
    const uint16_t *a = w, *b = x;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(hr_bf16_to_f32(a[i]) * hr_bf16_to_f32(b[i]));
    *s = (float)sum;
}

static void dot_q8_0(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q8_0 *a = w, *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        int si = 0;
        for (int j = 0; j < HR_QK; j++) si += a[i].qs[j] * b[i].qs[j];
        sum += (float)si * (hr_f16_to_f32(a[i].d) * hr_f16_to_f32(b[i].d));
    }
    *s = sum;
}

static void dot_q4_0(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q4_0 *a = w;
    const hr_block_q8_0 *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        int s0 = 0, s1 = 0;
        for (int j = 0; j < HR_QK / 2; j++) {
            s0 += ((a[i].qs[j] & 0x0f) - 8) * b[i].qs[j];
            s1 += ((a[i].qs[j] >> 4) - 8) * b[i].qs[j + HR_QK / 2];
        }
        sum += (float)(s0 + s1) * (hr_f16_to_f32(a[i].d) * hr_f16_to_f32(b[i].d));
    }
    *s = sum;
}

static const hr_kernels_ext k_scalar = {
    .k = {
        .name = "scalar",
        .attn_wsum = hr_attn_wsum_c,
        .attn_wsum_grp = hr_attn_wsum_grp_c,
        .vec_dot = {[HR_F32] = dot_f32, [HR_F16] = dot_f16, [HR_BF16] = dot_bf16,
                    [HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0,
                    /* kernels_scalar_quant.c */
                    [HR_Q4_1] = hr_dot_q4_1_scalar, [HR_Q5_0] = hr_dot_q5_0_scalar,
                    [HR_Q5_1] = hr_dot_q5_1_scalar, [HR_IQ4_NL] = hr_dot_iq4_nl_scalar,
                    [HR_MXFP4] = hr_dot_mxfp4_scalar, [HR_Q2_K] = hr_dot_q2_K_scalar,
                    [HR_Q3_K] = hr_dot_q3_K_scalar, [HR_Q4_K] = hr_dot_q4_K_scalar,
                    [HR_Q5_K] = hr_dot_q5_K_scalar, [HR_Q6_K] = hr_dot_q6_K_scalar,
                    [HR_IQ4_XS] = hr_dot_iq4_xs_scalar},
        .act_prep = {[HR_F32] = prep_f32, [HR_F16] = hr_prep_f16_scalar,
                     [HR_BF16] = hr_prep_bf16_scalar, [HR_Q8_0] = hr_prep_q8_0_scalar,
                     [HR_Q4_0] = hr_prep_q8_0_scalar,
                     [HR_Q4_1] = hr_prep_q8_1_scalar, [HR_Q5_1] = hr_prep_q8_1_scalar,
                     [HR_Q5_0] = hr_prep_q8_0_scalar, [HR_IQ4_NL] = hr_prep_q8_0_scalar,
                     [HR_MXFP4] = hr_prep_q8_0_scalar,
                     [HR_Q2_K] = hr_prep_q8_K_scalar, [HR_Q3_K] = hr_prep_q8_K_scalar,
                     [HR_Q4_K] = hr_prep_q8_K_scalar, [HR_Q5_K] = hr_prep_q8_K_scalar,
                     [HR_Q6_K] = hr_prep_q8_K_scalar, [HR_IQ4_XS] = hr_prep_q8_K_scalar},
    },
};

const hr_kernels_ext *hr_kext_scalar(void) { return &k_scalar; }
