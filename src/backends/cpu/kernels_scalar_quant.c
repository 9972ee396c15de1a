/* Plain-C reference kernels of the newer weight types: the activation preps ggml's x86
 * CPU backend uses for their vec_dot types (Q8_1, Q8_K) and the vec_dots themselves, with
 * the integer arithmetic of ggml's generic kernels (exact integer sums per block or
 * sub-block, float only for scaling), so results track llama.cpp. They are the twins
 * every SIMD variant of these types is tested against. */
#include <math.h>
#include <string.h>

#include "kernels_impl.h"

static float f16(uint16_t h) { return hr_f16_to_f32(h); }

/* ---- activation preps ---- */

/* ggml's x86 quantize_row_q8_1 (AVX2): id = 127/amax (not 1/d), ties to even, and
 * s = F16(d * sum(q)) with d the unrounded float amax/127, so s is rounded once. */
void hr_prep_q8_1_scalar(const float *x, void *xq, int64_t n) {
    hr_block_q8_1 *y = xq;
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        const float d = hr_q8_block_scalar(x, y[i].qs);
        int sum = 0;
        for (int j = 0; j < HR_QK; j++) sum += y[i].qs[j];
        y[i].d = hr_f32_to_f16(d);
        y[i].s = hr_f32_to_f16(d * (float)sum);
    }
}

/* ggml's quantize_row_q8_K_ref (its x86 build has no SIMD version): the scale comes from
 * the signed element of largest magnitude (first one on ties), iscale = -127/max, ties to
 * even, clamped at 127, d = 1/iscale; bsums are the sums of each 16 quants (the K-quant
 * dots use them for their min terms). An all-zero block gets d = 0 and zero quants. */
void hr_prep_q8_K_scalar(const float *x, void *xq, int64_t n) {
    hr_block_q8_K *y = xq;
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < HR_QK_K; j++) {
            float a = fabsf(x[j]);
            if (a > amax) {
                amax = a;
                max = x[j];
            }
        }
        memset(&y[i], 0, sizeof y[i]);
        if (amax == 0.0f) continue;
        const float iscale = -127.f / max;
        for (int j = 0; j < HR_QK_K; j++) {
            /* ggml's bit-trick rounding turns NaN into 0; a float-to-int cast of it is undefined. */
            const float r = hr_round_even(iscale * x[j]);
            int v = r != r ? 0 : r > 127.f ? 127 : r < -128.f ? -128 : (int)r;
            y[i].qs[j] = (int8_t)v;
        }
        for (int j = 0; j < HR_QK_K / 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += y[i].qs[16 * j + k];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

/* ---- 32-element types ---- */

static uint32_t qh32(const uint8_t qh[4]) {
    uint32_t h;
    memcpy(&h, qh, 4);
    return h;
}

/* Q4_1 x Q8_1: d_w*d_x*sum(q*x) + m*s, s standing for d_x*sum(x) */
void hr_dot_q4_1_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q4_1 *a = w;
    const hr_block_q8_1 *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        int s0 = 0, s1 = 0;
        for (int j = 0; j < HR_QK / 2; j++) {
            s0 += (a[i].qs[j] & 0x0f) * b[i].qs[j];
            s1 += (a[i].qs[j] >> 4) * b[i].qs[j + HR_QK / 2];
        }
        sum += (f16(a[i].d) * f16(b[i].d)) * (float)(s0 + s1) + f16(a[i].m) * f16(b[i].s);
    }
    *s = sum;
}

void hr_dot_q5_0_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q5_0 *a = w;
    const hr_block_q8_0 *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        const uint32_t h = qh32(a[i].qh);
        int s0 = 0, s1 = 0;
        for (int j = 0; j < HR_QK / 2; j++) {
            int v0 = (int)((a[i].qs[j] & 0x0f) | (((h >> j) & 1) << 4)) - 16;
            int v1 = (int)((a[i].qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4)) - 16;
            s0 += v0 * b[i].qs[j];
            s1 += v1 * b[i].qs[j + HR_QK / 2];
        }
        sum += (f16(a[i].d) * f16(b[i].d)) * (float)(s0 + s1);
    }
    *s = sum;
}

void hr_dot_q5_1_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q5_1 *a = w;
    const hr_block_q8_1 *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        const uint32_t h = qh32(a[i].qh);
        int s0 = 0, s1 = 0;
        for (int j = 0; j < HR_QK / 2; j++) {
            int v0 = (int)((a[i].qs[j] & 0x0f) | (((h >> j) & 1) << 4));
            int v1 = (int)((a[i].qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4));
            s0 += v0 * b[i].qs[j];
            s1 += v1 * b[i].qs[j + HR_QK / 2];
        }
        sum += (f16(a[i].d) * f16(b[i].d)) * (float)(s0 + s1) + f16(a[i].m) * f16(b[i].s);
    }
    *s = sum;
}

/* 4-bit indices into a table of 16 int8 levels (IQ4_NL, MXFP4), against Q8_0 */
static int lut_block(const uint8_t qs[HR_QK / 2], const int8_t *lut, const int8_t *xq) {
    int s0 = 0, s1 = 0;
    for (int j = 0; j < HR_QK / 2; j++) {
        s0 += lut[qs[j] & 0x0f] * xq[j];
        s1 += lut[qs[j] >> 4] * xq[j + HR_QK / 2];
    }
    return s0 + s1;
}

void hr_dot_iq4_nl_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_iq4_nl *a = w;
    const hr_block_q8_0 *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++)
        sum += (f16(b[i].d) * f16(a[i].d)) * (float)lut_block(a[i].qs, hr_kvalues_iq4nl, b[i].qs);
    *s = sum;
}

/* the values table is doubled, so the E8M0 scale is taken halved (exact) */
void hr_dot_mxfp4_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_mxfp4 *a = w;
    const hr_block_q8_0 *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++)
        sum += (f16(b[i].d) * hr_e8m0_to_f32_half(a[i].e)) * (float)lut_block(a[i].qs, hr_kvalues_mxfp4, b[i].qs);
    *s = sum;
}

/* ---- K-quants and IQ4_XS against Q8_K ----
 * Per super-block: one exact int32 sum of scale * q * x over the sub-blocks (fits: at
 * most 256 * 63 * 128 * 127 in magnitude), scaled once by d_w * d_x; the min terms come
 * from the activation's bsums. */

void hr_dot_q2_K_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q2_K *a = w;
    const hr_block_q8_K *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        const uint8_t *sc = a[i].scales;
        int summs = 0;
        for (int j = 0; j < 16; j++) summs += b[i].bsums[j] * (sc[j] >> 4);
        /* 2 halves of 128; in each, 4 shifts of 2 bits over 32 bytes, two sub-blocks of 16 */
        int isum = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t *q2 = a[i].qs + 32 * h;
            for (int k = 0; k < 4; k++) {
                const int8_t *q8 = b[i].qs + 128 * h + 32 * k;
                const int shift = 2 * k;
                for (int half = 0; half < 2; half++) {
                    int t = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++) t += q8[l] * ((q2[l] >> shift) & 3);
                    isum += (sc[8 * h + 2 * k + half] & 0x0f) * t;
                }
            }
        }
        const float dall = b[i].d * f16(a[i].d), dmin = b[i].d * f16(a[i].dmin);
        sum += dall * (float)isum - dmin * (float)summs;
    }
    *s = sum;
}

/* Q3_K's 16 6-bit scales from the 12 packed bytes (low 4 bits in bytes 0-7, high 2 bits
 * in bytes 8-11), minus their offset 32 */
static void q3_scales(const uint8_t p[12], int sc[16]) {
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? p[j] & 0x0f : p[j - 8] >> 4;
        int hi = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (lo | (hi << 4)) - 32;
    }
}

void hr_dot_q3_K_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q3_K *a = w;
    const hr_block_q8_K *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        int sc[16];
        q3_scales(a[i].scales, sc);
        /* element 128h + 32k + l: 2 bits at shift 2k of qs[32h + l], minus 4 unless bit
         * 4h + k of hmask[l] is set; sub-block of 16 = element / 16 */
        int isum = 0;
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    int t = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int q = (a[i].qs[32 * h + l] >> (2 * k)) & 3;
                        q -= (a[i].hmask[l] >> (4 * h + k)) & 1 ? 0 : 4;
                        t += q * b[i].qs[128 * h + 32 * k + l];
                    }
                    isum += sc[8 * h + 2 * k + half] * t;
                }
        sum += (f16(a[i].d) * b[i].d) * (float)isum;
    }
    *s = sum;
}

/* Q4_K and Q5_K: 8 sub-blocks of 32, 6-bit scale and min each; element 64j + l (l < 32)
 * is the low nibble of qs[32j + l], element 64j + 32 + l the high one; Q5_K's fifth bit
 * of element 32m + l is bit m of qh[l]. */
static void k45_dot(const uint16_t dd[2], const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                    const hr_block_q8_K *b, float *sum) {
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) hr_k4_scale_min(j, scales, &sc[j], &mn[j]);
    int summs = 0;
    for (int j = 0; j < 16; j++) summs += b->bsums[j] * mn[j / 2];
    int isum = 0;
    for (int m = 0; m < 8; m++) {
        const uint8_t *q = qs + 32 * (m / 2);
        const int shift = 4 * (m & 1);
        int t = 0;
        for (int l = 0; l < 32; l++) {
            int v = (q[l] >> shift) & 0x0f;
            if (qh) v += ((qh[l] >> m) & 1) << 4;
            t += v * b->qs[32 * m + l];
        }
        isum += sc[m] * t;
    }
    const float d = f16(dd[0]) * b->d, dmin = f16(dd[1]) * b->d;
    *sum += d * (float)isum - dmin * (float)summs;
}

void hr_dot_q4_K_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q4_K *a = w;
    const hr_block_q8_K *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        const uint16_t dd[2] = {a[i].d, a[i].dmin};
        k45_dot(dd, a[i].scales, a[i].qs, NULL, &b[i], &sum);
    }
    *s = sum;
}

void hr_dot_q5_K_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q5_K *a = w;
    const hr_block_q8_K *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        const uint16_t dd[2] = {a[i].d, a[i].dmin};
        k45_dot(dd, a[i].scales, a[i].qs, a[i].qh, &b[i], &sum);
    }
    *s = sum;
}

/* Q6_K: per half h of 128, element 128h + 32k + l (l < 32) has low 4 bits from
 * ql[64h + l + 32(k&1)] (nibble k/2) and high 2 bits at shift 2k of qh[32h + l]; minus 32;
 * 16 signed 8-bit scales, one per 16 elements. */
void hr_dot_q6_K_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q6_K *a = w;
    const hr_block_q8_K *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        int isum = 0;
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    int t = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int lo = (a[i].ql[64 * h + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0x0f;
                        int hi = (a[i].qh[32 * h + l] >> (2 * k)) & 3;
                        t += ((lo | (hi << 4)) - 32) * b[i].qs[128 * h + 32 * k + l];
                    }
                    isum += a[i].scales[8 * h + 2 * k + half] * t;
                }
        sum += (f16(a[i].d) * b[i].d) * (float)isum;
    }
    *s = sum;
}

/* IQ4_XS: 8 sub-blocks of 32 in IQ4_NL's layout, 6-bit scales (low 4 bits in scales_l,
 * high 2 in scales_h) minus 32; one float term per sub-block, as ggml does. */
void hr_dot_iq4_xs_scalar(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_iq4_xs *a = w;
    const hr_block_q8_K *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        const float d = f16(a[i].d) * b[i].d;
        for (int j = 0; j < 8; j++) {
            int ls = ((a[i].scales_l[j / 2] >> (4 * (j & 1))) & 0x0f) | (((a[i].scales_h >> (2 * j)) & 3) << 4);
            int t = lut_block(a[i].qs + 16 * j, hr_kvalues_iq4nl, b[i].qs + 32 * j);
            sum += (d * (float)(ls - 32)) * (float)t;
        }
    }
    *s = sum;
}
