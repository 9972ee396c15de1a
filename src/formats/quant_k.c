/* Reference quantizers of the 256-element super-block types: Q2_K..Q6_K, Q8_K, IQ4_XS. Byte
 * for byte as ggml's quantize_row_*_ref without an importance matrix. Each works in two
 * rounds: search a float scale (and min) per sub-block (quant_k_search.c), quantize those to
 * a few bits against one F16 super-scale, then re-pick every level against the scale as it
 * will actually be decoded. Layouts: types.h. */
#include <math.h>

#include "quant_internal.h"

/* 2-bit levels of four 32-element groups packed into 32 bytes (shifts 0, 2, 4, 6). */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < HR_QK_K; j += 128, qs += 32)
        for (int l = 0; l < 32; l++)
            qs[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

/* Q2_K and Q4_K/Q5_K: after the sub-block search, 4- or 6-bit scale and min codes relative
 * to the largest of each (both are >= 0 here: the min is subtracted). */
static float max_of(const float *v, int n) {
    float m = 0;
    for (int j = 0; j < n; j++)
        if (v[j] > m) m = v[j];
    return m;
}

void hr_quant_q2_K(const float *x, hr_block_q2_K *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        uint8_t L[HR_QK_K];
        float scales[16], mins[16], w[16];
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
            scales[j] = hr_qsearch_min(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
        }
        const float max_scale = max_of(scales, 16), max_min = max_of(mins, 16);
        memset(y[i].scales, 0, sizeof y[i].scales);
        y[i].d = hr_f32_to_f16(max_scale > 0 ? max_scale / 15.f : 0.f);
        y[i].dmin = hr_f32_to_f16(max_min > 0 ? max_min / 15.f : 0.f);
        if (max_scale > 0) {
            const float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) y[i].scales[j] = (uint8_t)hr_qnearest(iscale * scales[j]);
        }
        if (max_min > 0) {
            const float iscale = 15.f / max_min;
            for (int j = 0; j < 16; j++) y[i].scales[j] |= (uint8_t)((unsigned)hr_qnearest(iscale * mins[j]) << 4);
        }
        for (int j = 0; j < 16; j++) {
            const float d = hr_f16_to_f32(y[i].d) * (y[i].scales[j] & 0xF);
            if (!d) continue; /* a zero scale keeps the search's levels */
            const float dm = hr_f16_to_f32(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (uint8_t)hr_qclamp(hr_qnearest((x[16 * j + l] + dm) / d), 0, 3);
        }
        pack_2bit(L, y[i].qs);
    }
}

/* Q3_K's 16 six-bit signed scales: low nibbles in bytes 0-7 (two per byte), the two high bits
 * of scale j in byte 8 + j%4 at bit 2*(j/4). */
static void q3_put_scale(uint8_t s[12], int j, int code) {
    if (j < 8) s[j] = (uint8_t)(code & 0xF);
    else s[j - 8] |= (uint8_t)((code & 0xF) << 4);
    s[8 + j % 4] |= (uint8_t)((code >> 4) << (2 * (j / 4)));
}

static int q3_get_scale(const uint8_t s[12], int j) {
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    return (lo | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

void hr_quant_q3_K(const float *x, hr_block_q3_K *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        int8_t L[HR_QK_K];
        float scales[16], amax = 0, max_scale = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = hr_qsearch_sym_refine(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                /* the reference narrows to int8 before clamping; keep that wrap */
                const int8_t l = (int8_t)(uint8_t)(unsigned)hr_qnearest(iscale * scales[j]);
                q3_put_scale(y[i].scales, j, hr_qclamp(l, -32, 31) + 32);
            }
            y[i].d = hr_f32_to_f16(1 / iscale);
        } else {
            y[i].d = hr_f32_to_f16(0.f);
        }
        for (int j = 0; j < 16; j++) {
            const float d = hr_f16_to_f32(y[i].d) * q3_get_scale(y[i].scales, j);
            if (!d) continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(hr_qclamp(hr_qnearest(x[16 * j + l] / d), -4, 3) + 4);
        }
        /* levels 0..7: the high bit of element j goes to hmask[j % 32] bit j / 32 */
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        uint8_t L2[HR_QK_K];
        for (int j = 0; j < HR_QK_K; j++) {
            if (L[j] > 3) y[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
            L2[j] = (uint8_t)(L[j] & 3);
        }
        pack_2bit(L2, y[i].qs);
    }
}

/* Q4_K/Q5_K: 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min code. */
static void k4_put_scale_min(uint8_t s[12], int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
        s[j - 4] |= (uint8_t)((ls >> 4) << 6);
        s[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

/* Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fills the scales and d/dmin, and L[256]. */
static void k45_levels(const float *x, int nmax, float rmin, int nstep, uint8_t s[12], uint16_t *dh,
                       uint16_t *dminh, uint8_t *L) {
    float scales[8], mins[8], w[32];
    for (int j = 0; j < 8; j++) {
        const float *xb = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += xb[l] * xb[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xb[l]);
        scales[j] = hr_qsearch_min(32, nmax, xb, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep, false);
    }
    const float max_scale = max_of(scales, 8), max_min = max_of(mins, 8);
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; j++) {
        const uint8_t ls = (uint8_t)hr_qnearest(inv_scale * scales[j]);
        const uint8_t lm = (uint8_t)hr_qnearest(inv_min * mins[j]);
        k4_put_scale_min(s, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
    }
    *dh = hr_f32_to_f16(max_scale / 63.f);
    *dminh = hr_f32_to_f16(max_min / 63.f);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        hr_k4_scale_min(j, s, &sc, &m);
        const float d = hr_f16_to_f32(*dh) * sc;
        if (!d) continue;
        const float dm = hr_f16_to_f32(*dminh) * m;
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)hr_qclamp(hr_qnearest((x[32 * j + l] + dm) / d), 0, nmax);
    }
}

void hr_quant_q4_K(const float *x, hr_block_q4_K *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        uint8_t L[HR_QK_K];
        memset(y[i].scales, 0, sizeof y[i].scales);
        k45_levels(x, 15, -1.f, 20, y[i].scales, &y[i].d, &y[i].dmin, L);
        for (int j = 0; j < HR_QK_K; j += 64)
            for (int l = 0; l < 32; l++) y[i].qs[j / 2 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
    }
}

void hr_quant_q5_K(const float *x, hr_block_q5_K *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        uint8_t L[HR_QK_K];
        memset(y[i].scales, 0, sizeof y[i].scales);
        k45_levels(x, 31, -0.5f, 15, y[i].scales, &y[i].d, &y[i].dmin, L);
        /* low nibbles as Q4_K; the fifth bit of pair p's two groups goes to qh bits 2p, 2p+1 */
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int j = 0; j < HR_QK_K; j += 64)
            for (int l = 0; l < 32; l++) {
                const int a = L[j + l], b = L[j + l + 32];
                y[i].qs[j / 2 + l] = (uint8_t)((a & 0xF) | (b & 0xF) << 4);
                y[i].qh[l] |= (uint8_t)((a >> 4) << (j / 32) | (b >> 4) << (j / 32 + 1));
            }
    }
}

void hr_quant_q6_K(const float *x, hr_block_q6_K *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        int8_t L[HR_QK_K];
        float scales[16], amax = 0, max_scale = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = hr_qsearch_sym(16, 32, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) { amax = fabsf(scales[j]); max_scale = scales[j]; }
        }
        memset(&y[i], 0, sizeof y[i]);
        if (amax < HR_GROUP_EPS) continue; /* all-zero bytes: d = +0 */
        const float iscale = -128.f / max_scale;
        y[i].d = hr_f32_to_f16(1 / iscale);
        for (int j = 0; j < 16; j++) {
            const int s = hr_qnearest(iscale * scales[j]);
            y[i].scales[j] = (int8_t)(uint8_t)(unsigned)(s < 127 ? s : 127);
        }
        for (int j = 0; j < 16; j++) {
            const float d = hr_f16_to_f32(y[i].d) * y[i].scales[j];
            if (!d) continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(hr_qclamp(hr_qnearest(x[16 * j + l] / d), -32, 31) + 32);
        }
        /* per 128: low nibbles of groups 0/2 and 1/3 share ql bytes; 2-bit highs fill qh */
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < HR_QK_K; j += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                const uint8_t *q = (const uint8_t *)L + j + l;
                ql[l] = (uint8_t)((q[0] & 0xF) | (q[64] & 0xF) << 4);
                ql[l + 32] = (uint8_t)((q[32] & 0xF) | (q[96] & 0xF) << 4);
                qh[l] = (uint8_t)(q[0] >> 4 | (q[32] >> 4) << 2 | (q[64] >> 4) << 4 | (q[96] >> 4) << 6);
            }
    }
}

void hr_quant_q8_K(const float *x, hr_block_q8_K *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        float amax = 0, max = 0;
        for (int j = 0; j < HR_QK_K; j++)
            if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
        memset(&y[i], 0, sizeof y[i]); /* a zero block: d = 0, no levels, zero sums (ggml leaves the sums unset) */
        if (!amax) continue;
        /* -127 (not -128) keeps the levels symmetric, which the SIMD products rely on */
        const float iscale = -127.f / max;
        for (int j = 0; j < HR_QK_K; j++) {
            const int v = hr_qnearest(iscale * x[j]);
            y[i].qs[j] = (int8_t)(uint8_t)(unsigned)(v < 127 ? v : 127);
        }
        for (int j = 0; j < HR_QK_K / 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

void hr_quant_iq4_xs(const float *x, hr_block_iq4_xs *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK_K; i++, x += HR_QK_K) {
        uint8_t L[HR_QK_K];
        float scales[8], amax = 0, max_scale = 0;
        for (int ib = 0; ib < 8; ib++) {
            scales[ib] = hr_qsearch_iq4(x + 32 * ib, L + 32 * ib, 7);
            if (fabsf(scales[ib]) > amax) { amax = fabsf(scales[ib]); max_scale = scales[ib]; }
        }
        /* 6-bit signed sub-scales against d = -max/32, then every level re-picked at the
         * sub-scale as decoded */
        const float d = -max_scale / 32;
        const float id = d ? 1 / d : 0.f;
        y[i].d = hr_f32_to_f16(d);
        y[i].scales_h = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int l = hr_qclamp(hr_qnearest(id * scales[ib]), -32, 31);
            const float dl = d * l;
            const float idl2 = 2 * (dl ? 1 / dl : 0.f); /* doubled: hr_iq4_index_2v */
            for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)hr_iq4_index_2v(idl2 * x[32 * ib + j]);
            const unsigned code = (unsigned)(l + 32);
            if (ib % 2 == 0) y[i].scales_l[ib / 2] = (uint8_t)(code & 0xF);
            else y[i].scales_l[ib / 2] |= (uint8_t)((code & 0xF) << 4);
            y[i].scales_h |= (uint16_t)((code >> 4) << (2 * ib));
        }
        for (int b = 0; b < 8; b++)
            for (int j = 0; j < 16; j++) y[i].qs[16 * b + j] = (uint8_t)(L[32 * b + j] | L[32 * b + 16 + j] << 4);
    }
}
