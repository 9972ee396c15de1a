/* Register decoders of the newer block types for the axpy kernels: 32 weights (group b
 * of a row: a whole block of the 32-element types, sub-block b % 8 of super-block b / 8
 * of the 256-element ones) as four 8-float AVX2 registers, each value exactly
 * hr_dequant_row's: the same float products and sums in the same order, never fused
 * (x * d + m is a multiply then an add, as in dequant.c). Included by sparse_axpy_avx2.c and
 * sparse_axpy_avx512.c (which is built with AVX2 too and joins the halves); only inside
 * their ISA checks. */
#ifndef HR_SPARSE_AXPY_DQ_AVX2_H
#define HR_SPARSE_AXPY_DQ_AVX2_H
#include <immintrin.h>
#include <string.h>

#include "sparse_axpy_impl.h"

#define DQ_INLINE static inline __attribute__((always_inline))

DQ_INLINE float dq_h(uint16_t h) { return _cvtsh_ss(h); }

/* Eight bytes p[0..7] widened to dwords. */
DQ_INLINE __m256i dq_u8x8(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

/* The fifth bits of elements 8g..8g+7 from a 32-bit qh word, as 16 or 0 per dword. */
DQ_INLINE __m256i dq_bit5(uint32_t qh, int g) {
    const __m256i sh = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i s = _mm256_add_epi32(sh, _mm256_set1_epi32(8 * g));
    const __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)qh), s), _mm256_set1_epi32(1));
    return _mm256_slli_epi32(bit, 4);
}

/* The four 8-element groups of a 32-element block with nibbles in qs[16] (low nibbles
 * elements 0-15, high ones 16-31), as dwords. */
DQ_INLINE void dq_nibbles(const uint8_t *qs, __m256i q[4]) {
    const __m256i m = _mm256_set1_epi32(0x0f);
    const __m256i x0 = dq_u8x8(qs), x1 = dq_u8x8(qs + 8);
    q[0] = _mm256_and_si256(x0, m);
    q[1] = _mm256_and_si256(x1, m);
    q[2] = _mm256_srli_epi32(x0, 4);
    q[3] = _mm256_srli_epi32(x1, 4);
}

/* Q4_1: q * d + m. */
DQ_INLINE void dqk_q4_1(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q4_1 *B = (const hr_block_q4_1 *)w + b;
    const __m256 d = _mm256_set1_ps(dq_h(B->d)), m = _mm256_set1_ps(dq_h(B->m));
    __m256i q[4];
    dq_nibbles(B->qs, q);
    for (int j = 0; j < 4; j++) v[j] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q[j]), d), m);
}

/* Q5_0: (q - 16) * d, the fifth bit from qh. */
DQ_INLINE void dqk_q5_0(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q5_0 *B = (const hr_block_q5_0 *)w + b;
    const __m256 d = _mm256_set1_ps(dq_h(B->d));
    uint32_t qh;
    memcpy(&qh, B->qh, 4);
    __m256i q[4];
    dq_nibbles(B->qs, q);
    for (int j = 0; j < 4; j++) {
        const __m256i x = _mm256_sub_epi32(_mm256_or_si256(q[j], dq_bit5(qh, j)), _mm256_set1_epi32(16));
        v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(x), d);
    }
}

/* Q5_1: q * d + m with the fifth bit. */
DQ_INLINE void dqk_q5_1(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q5_1 *B = (const hr_block_q5_1 *)w + b;
    const __m256 d = _mm256_set1_ps(dq_h(B->d)), m = _mm256_set1_ps(dq_h(B->m));
    uint32_t qh;
    memcpy(&qh, B->qh, 4);
    __m256i q[4];
    dq_nibbles(B->qs, q);
    for (int j = 0; j < 4; j++) {
        const __m256 x = _mm256_cvtepi32_ps(_mm256_or_si256(q[j], dq_bit5(qh, j)));
        v[j] = _mm256_add_ps(_mm256_mul_ps(x, d), m);
    }
}

/* 32 table values picked by the nibbles of qs[16] (a byte shuffle), times d. */
DQ_INLINE void dq_table(const int8_t *table, const uint8_t *qs, __m256 d, __m256 v[4]) {
    const __m128i tab = _mm_loadu_si128((const __m128i *)table);
    const __m128i x = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_shuffle_epi8(tab, _mm_and_si128(x, m));
    const __m128i hi = _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(x, 4), m));
    const __m128i part[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int j = 0; j < 4; j++) v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part[j])), d);
}

DQ_INLINE void dqk_iq4_nl(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_iq4_nl *B = (const hr_block_iq4_nl *)w + b;
    dq_table(hr_kvalues_iq4nl, B->qs, _mm256_set1_ps(dq_h(B->d)), v);
}

DQ_INLINE void dqk_mxfp4(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_mxfp4 *B = (const hr_block_mxfp4 *)w + b;
    dq_table(hr_kvalues_mxfp4, B->qs, _mm256_set1_ps(hr_e8m0_to_f32_half(B->e)), v);
}

/* IQ4_XS sub-block ib: dl = d * (ls - 32) with the 6-bit ls, values from the IQ4_NL table. */
DQ_INLINE void dqk_iq4_xs(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_iq4_xs *B = (const hr_block_iq4_xs *)w + b / 8;
    const int ib = (int)(b % 8);
    const int ls = ((B->scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | ((B->scales_h >> 2 * ib) & 3) << 4;
    const float dl = dq_h(B->d) * (float)(ls - 32);
    dq_table(hr_kvalues_iq4nl, B->qs + 16 * ib, _mm256_set1_ps(dl), v);
}

/* Q4_K / Q5_K sub-block sb: d1 * q - m1 with d1 = d * scale, m1 = dmin * min (6-bit
 * fields); q from the low (even sb) or high (odd sb) nibbles of qs[32 * (sb / 2) ..],
 * plus 16 where bit sb of qh[l] is set (Q5_K). */
DQ_INLINE void dq_k4(const uint8_t *scales, uint16_t dh, uint16_t dminh, int sb, const uint8_t *qs,
                     const uint8_t *qh, __m256 v[4]) {
    /* hr_k4_scale_min's unpacking, inline: an out-of-line call per sub-block cost a third */
    const int sc = sb < 4 ? scales[sb] & 63 : (scales[sb + 4] & 0xF) | ((scales[sb - 4] >> 6) << 4);
    const int mn = sb < 4 ? scales[sb + 4] & 63 : (scales[sb + 4] >> 4) | ((scales[sb] >> 6) << 4);
    const __m256 d1 = _mm256_set1_ps(dq_h(dh) * (float)sc), m1 = _mm256_set1_ps(dq_h(dminh) * (float)mn);
    const __m128i shift = _mm_cvtsi32_si128(4 * (sb & 1));
    const __m128i hshift = _mm_cvtsi32_si128(sb);
    for (int j = 0; j < 4; j++) {
        __m256i q = _mm256_and_si256(_mm256_srl_epi32(dq_u8x8(qs + 8 * j), shift), _mm256_set1_epi32(0x0f));
        if (qh) {
            const __m256i h = _mm256_and_si256(_mm256_srl_epi32(dq_u8x8(qh + 8 * j), hshift), _mm256_set1_epi32(1));
            q = _mm256_add_epi32(q, _mm256_slli_epi32(h, 4));
        }
        v[j] = _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d1), m1);
    }
}

DQ_INLINE void dqk_q4_K(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q4_K *B = (const hr_block_q4_K *)w + b / 8;
    const int sb = (int)(b % 8);
    dq_k4(B->scales, B->d, B->dmin, sb, B->qs + 32 * (sb / 2), NULL, v);
}

DQ_INLINE void dqk_q5_K(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q5_K *B = (const hr_block_q5_K *)w + b / 8;
    const int sb = (int)(b % 8);
    dq_k4(B->scales, B->d, B->dmin, sb, B->qs + 32 * (sb / 2), B->qh, v);
}

/* Q6_K sub-block sb = 4n + k of the 128-element half n: 4 low bits from ql[64n (+32 for
 * odd k) + l] (high nibble for k >= 2), 2 high bits (qh[32n + l] >> 2k), minus 32; times
 * (d * scale) with scale scales[8n + 2k + l / 16]. */
DQ_INLINE void dqk_q6_K(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q6_K *B = (const hr_block_q6_K *)w + b / 8;
    const int sb = (int)(b % 8), n = sb / 4, k = sb % 4;
    const uint8_t *ql = B->ql + 64 * n + (k & 1 ? 32 : 0), *qh = B->qh + 32 * n;
    const float d = dq_h(B->d);
    const __m256 s0 = _mm256_set1_ps(d * (float)B->scales[8 * n + 2 * k]);
    const __m256 s1 = _mm256_set1_ps(d * (float)B->scales[8 * n + 2 * k + 1]);
    const __m128i lshift = _mm_cvtsi32_si128(k >= 2 ? 4 : 0), hshift = _mm_cvtsi32_si128(2 * k);
    for (int j = 0; j < 4; j++) {
        const __m256i lo = _mm256_and_si256(_mm256_srl_epi32(dq_u8x8(ql + 8 * j), lshift), _mm256_set1_epi32(0x0f));
        const __m256i hi = _mm256_and_si256(_mm256_srl_epi32(dq_u8x8(qh + 8 * j), hshift), _mm256_set1_epi32(3));
        const __m256i q = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), j < 2 ? s0 : s1);
    }
}
/* Q2_K / Q3_K sub-block sb = 4n + s of the 128-element half n: 2-bit values at shift 2s
 * of qs[32n + l]; two 16-element scale groups 8n + 2s and 8n + 2s + 1. */
DQ_INLINE __m256i dq_2bit(const uint8_t *q, int j, int shift) {
    return _mm256_and_si256(_mm256_srl_epi32(dq_u8x8(q + 8 * j), _mm_cvtsi32_si128(shift)), _mm256_set1_epi32(3));
}

/* Q2_K: dl * q - ml, dl = d * (scale & 15), ml = dmin * (scale >> 4). */
DQ_INLINE void dqk_q2_K(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q2_K *B = (const hr_block_q2_K *)w + b / 8;
    const int sb = (int)(b % 8), n = sb / 4, s = sb % 4;
    const float d = dq_h(B->d), dmin = dq_h(B->dmin);
    __m256 dl[2], ml[2];
    for (int h = 0; h < 2; h++) {
        const uint8_t sc = B->scales[8 * n + 2 * s + h];
        dl[h] = _mm256_set1_ps(d * (float)(sc & 0xF));
        ml[h] = _mm256_set1_ps(dmin * (float)(sc >> 4));
    }
    for (int j = 0; j < 4; j++)
        v[j] = _mm256_sub_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(dq_2bit(B->qs + 32 * n, j, 2 * s)), dl[j / 2]), ml[j / 2]);
}

/* Q3_K's 6-bit signed scale j (as dequant.c's q3_scales). */
DQ_INLINE int dq_q3_scale(const uint8_t *s, int j) {
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | hi << 4) - 32;
}

/* Q3_K: dl * (q - 4 where bit sb of hmask[l] is clear), dl = d * scale. */
DQ_INLINE void dqk_q3_K(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q3_K *B = (const hr_block_q3_K *)w + b / 8;
    const int sb = (int)(b % 8), n = sb / 4, s = sb % 4;
    const float d = dq_h(B->d);
    const __m256 dl[2] = {_mm256_set1_ps(d * (float)dq_q3_scale(B->scales, 8 * n + 2 * s)),
                          _mm256_set1_ps(d * (float)dq_q3_scale(B->scales, 8 * n + 2 * s + 1))};
    const __m128i hs = _mm_cvtsi32_si128(sb);
    for (int j = 0; j < 4; j++) {
        const __m256i hb = _mm256_and_si256(_mm256_srl_epi32(dq_u8x8(B->hmask + 8 * j), hs), _mm256_set1_epi32(1));
        /* hb = 1: no offset; 0: minus 4, i.e. q - 4 + 4 * hb */
        const __m256i q = _mm256_add_epi32(_mm256_sub_epi32(dq_2bit(B->qs + 32 * n, j, 2 * s), _mm256_set1_epi32(4)),
                                           _mm256_slli_epi32(hb, 2));
        v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), dl[j / 2]);
    }
}
#endif
