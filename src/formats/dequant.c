/* Dequantization of the block types beyond Q8_0/Q4_0, value for value as ggml's
 * dequantize_row_* (the same products in the same float order), so a weight means the
 * same number in Hearth and llama.cpp. Layouts: types.h. */
#include <string.h>

#include "types.h"

const int8_t hr_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};
const int8_t hr_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float hr_e8m0_to_f32_half(uint8_t e) {
    /* 2^(e-128): below e = 2 the result is an F32 subnormal, built from its bits. */
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void hr_k4_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    /* 8 six-bit scales and 8 six-bit mins in 12 bytes: the first four of each whole in the
     * low 6 bits of bytes 0-7, the last four split as a low nibble in bytes 8-11 and the top
     * two bits in the spare bits of bytes 0-7. */
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

static void dq_q4_1(const hr_block_q4_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += HR_QK) {
        const float d = hr_f16_to_f32(b[i].d), m = hr_f16_to_f32(b[i].m);
        for (int j = 0; j < HR_QK / 2; j++) {
            y[j] = (b[i].qs[j] & 0x0F) * d + m;
            y[j + HR_QK / 2] = (b[i].qs[j] >> 4) * d + m;
        }
    }
}

static uint32_t qh_bits(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

static void dq_q5_0(const hr_block_q5_0 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += HR_QK) {
        const float d = hr_f16_to_f32(b[i].d);
        const uint32_t qh = qh_bits(b[i].qh);
        for (int j = 0; j < HR_QK / 2; j++) {
            const int x0 = (int)((b[i].qs[j] & 0x0F) | ((qh >> j) & 1) << 4) - 16;
            const int x1 = (int)((b[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16;
            y[j] = x0 * d;
            y[j + HR_QK / 2] = x1 * d;
        }
    }
}

static void dq_q5_1(const hr_block_q5_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += HR_QK) {
        const float d = hr_f16_to_f32(b[i].d), m = hr_f16_to_f32(b[i].m);
        const uint32_t qh = qh_bits(b[i].qh);
        for (int j = 0; j < HR_QK / 2; j++) {
            const int x0 = (int)((b[i].qs[j] & 0x0F) | ((qh >> j) & 1) << 4);
            const int x1 = (int)((b[i].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
            y[j] = x0 * d + m;
            y[j + HR_QK / 2] = x1 * d + m;
        }
    }
}

static void dq_q8_1(const hr_block_q8_1 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += HR_QK) {
        const float d = hr_f16_to_f32(b[i].d);
        for (int j = 0; j < HR_QK; j++) y[j] = b[i].qs[j] * d;
    }
}

static void dq_iq4_nl(const hr_block_iq4_nl *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += HR_QK) {
        const float d = hr_f16_to_f32(b[i].d);
        for (int j = 0; j < HR_QK / 2; j++) {
            y[j] = d * hr_kvalues_iq4nl[b[i].qs[j] & 0x0F];
            y[j + HR_QK / 2] = d * hr_kvalues_iq4nl[b[i].qs[j] >> 4];
        }
    }
}

static void dq_mxfp4(const hr_block_mxfp4 *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += HR_QK) {
        const float d = hr_e8m0_to_f32_half(b[i].e);
        for (int j = 0; j < HR_QK / 2; j++) {
            y[j] = hr_kvalues_mxfp4[b[i].qs[j] & 0x0F] * d;
            y[j + HR_QK / 2] = hr_kvalues_mxfp4[b[i].qs[j] >> 4] * d;
        }
    }
}

/* Q2_K: 16 sub-blocks of 16, a 4-bit scale and 4-bit min each; 2-bit values, four
 * 32-element groups sharing each 32 bytes of qs at shifts 0, 2, 4, 6. */
static void dq_q2_K(const hr_block_q2_K *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hr_f16_to_f32(b[i].d), dmin = hr_f16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs;
        int is = 0;
        for (int n = 0; n < HR_QK_K; n += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int half = 0; half < 2; half++) {
                    const uint8_t sc = b[i].scales[is++];
                    const float dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
                }
    }
}

/* Q3_K's 16 six-bit scales: low nibbles in bytes 0-7, top two bits in bytes 8-11. */
static void q3_scales(const uint8_t s[12], int8_t out[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

static void dq_q3_K(const hr_block_q3_K *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d_all = hr_f16_to_f32(b[i].d);
        int8_t sc[16];
        q3_scales(b[i].scales, sc);
        const uint8_t *q = b[i].qs;
        uint8_t m = 1;
        int is = 0;
        for (int n = 0; n < HR_QK_K; n += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int half = 0; half < 2; half++) {
                    const float dl = d_all * sc[is++];
                    for (int l = 0; l < 16; l++) {
                        const int k = l + 16 * half;
                        const int v = ((q[k] >> shift) & 3) - ((b[i].hmask[k] & m) ? 0 : 4);
                        *y++ = dl * v;
                    }
                }
    }
}

static void dq_q4_K(const hr_block_q4_K *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hr_f16_to_f32(b[i].d), dmin = hr_f16_to_f32(b[i].dmin);
        const uint8_t *q = b[i].qs;
        for (int j = 0; j < 8; j += 2, q += 32) {
            uint8_t sc, m;
            hr_k4_scale_min(j, b[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            hr_k4_scale_min(j + 1, b[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

static void dq_q5_K(const hr_block_q5_K *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hr_f16_to_f32(b[i].d), dmin = hr_f16_to_f32(b[i].dmin);
        const uint8_t *ql = b[i].qs, *qh = b[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < 8; j += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            hr_k4_scale_min(j, b[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = dmin * m;
            hr_k4_scale_min(j + 1, b[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

/* Q6_K: per 128 elements, 64 bytes of low nibbles and 32 of 2-bit high parts; element
 * l + 32k takes nibble (k & 1 ? ql[l+32] : ql[l]) >> (k >= 2 ? 4 : 0) and bits 2k of qh[l]. */
static void dq_q6_K(const hr_block_q6_K *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hr_f16_to_f32(b[i].d);
        const uint8_t *ql = b[i].ql, *qh = b[i].qh;
        const int8_t *sc = b[i].scales;
        for (int n = 0; n < HR_QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * sc[is] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
    }
}

static void dq_q8_K(const hr_block_q8_K *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < HR_QK_K; j++) *y++ = b[i].d * b[i].qs[j];
}

/* IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (low nibble in scales_l, two high bits in
 * scales_h), values from the IQ4_NL table. */
static void dq_iq4_xs(const hr_block_iq4_xs *b, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = hr_f16_to_f32(b[i].d);
        const uint8_t *qs = b[i].qs;
        for (int ib = 0; ib < 8; ib++, y += 32, qs += 16) {
            const int ls = ((b[i].scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | ((b[i].scales_h >> 2 * ib) & 3) << 4;
            const float dl = d * (ls - 32);
            for (int j = 0; j < 16; j++) {
                y[j] = dl * hr_kvalues_iq4nl[qs[j] & 0xF];
                y[j + 16] = dl * hr_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

bool hr_dequant_row_blocks(uint32_t t, const void *src, float *dst, int64_t n) {
    const int64_t nb = n / (int64_t)(hr_type_block_elems(t) ? hr_type_block_elems(t) : 1);
    switch (t) {
    case HR_Q4_1: dq_q4_1(src, dst, nb); return true;
    case HR_Q5_0: dq_q5_0(src, dst, nb); return true;
    case HR_Q5_1: dq_q5_1(src, dst, nb); return true;
    case HR_Q8_1: dq_q8_1(src, dst, nb); return true;
    case HR_IQ4_NL: dq_iq4_nl(src, dst, nb); return true;
    case HR_MXFP4: dq_mxfp4(src, dst, nb); return true;
    case HR_Q2_K: dq_q2_K(src, dst, nb); return true;
    case HR_Q3_K: dq_q3_K(src, dst, nb); return true;
    case HR_Q4_K: dq_q4_K(src, dst, nb); return true;
    case HR_Q5_K: dq_q5_K(src, dst, nb); return true;
    case HR_Q6_K: dq_q6_K(src, dst, nb); return true;
    case HR_Q8_K: dq_q8_K(src, dst, nb); return true;
    case HR_IQ4_XS: dq_iq4_xs(src, dst, nb); return true;
    default: return false;
    }
}
