/* Register decoders of the newer block types for the axpy kernels: 32 weights (group b
 * of a row: a whole block of the 32-element types, sub-block b % 8 of super-block b / 8
 * of the 256-element ones) as four 8-float AVX2 registers, each value exactly
 * hr_dequant_row's: the same float products and sums in the same order, never fused
 * (x * d + m is a multiply then an add, as in dequant.c). Included by sparse_axpy_avx2.c and
 * sparse_axpy_avx512.c (built with AVX2 too; it uses the super-block decoding of the
 * 256-element types and has its own 32-element decoders); only inside their ISA checks. */
#ifndef HR_SPARSE_AXPY_DQ_AVX2_H
#define HR_SPARSE_AXPY_DQ_AVX2_H
#include <immintrin.h>
#include <string.h>

#include "sparse_axpy_impl.h"

#define DQ_INLINE static inline __attribute__((always_inline))

DQ_INLINE float dq_h(uint16_t h) { return _cvtsh_ss(h); }
/* hr_e8m0_to_f32_half inline (its out-of-line call per MXFP4 block took ~30% of the
 * AVX2 kernel's time): 2^(e-128) from its bits, an F32 subnormal below e = 2. */
DQ_INLINE float dq_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

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
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) v[j] = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q[j]), d), m);
}

/* Q5_0: (q - 16) * d, the fifth bit from qh. */
DQ_INLINE void dqk_q5_0(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_q5_0 *B = (const hr_block_q5_0 *)w + b;
    const __m256 d = _mm256_set1_ps(dq_h(B->d));
    uint32_t qh;
    memcpy(&qh, B->qh, 4);
    __m256i q[4];
    dq_nibbles(B->qs, q);
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
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
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
        const __m256 x = _mm256_cvtepi32_ps(_mm256_or_si256(q[j], dq_bit5(qh, j)));
        v[j] = _mm256_add_ps(_mm256_mul_ps(x, d), m);
    }
}

/* 32 table values picked by the nibbles of qs[16] (a byte shuffle), times d.
 * (These loops are unrolled by pragma: at -O2 GCC kept part[] and v[] on the stack,
 * which halved the speed of the 32-element types.) */
DQ_INLINE void dq_table(const int8_t *table, const uint8_t *qs, __m256 d, __m256 v[4]) {
    const __m128i tab = _mm_loadu_si128((const __m128i *)table);
    const __m128i x = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_shuffle_epi8(tab, _mm_and_si128(x, m));
    const __m128i hi = _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(x, 4), m));
    const __m128i part[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) v[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(part[j])), d);
}

DQ_INLINE void dqk_iq4_nl(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_iq4_nl *B = (const hr_block_iq4_nl *)w + b;
    dq_table(hr_kvalues_iq4nl, B->qs, _mm256_set1_ps(dq_h(B->d)), v);
}

DQ_INLINE void dqk_mxfp4(const void *w, int64_t b, __m256 v[4]) {
    const hr_block_mxfp4 *B = (const hr_block_mxfp4 *)w + b;
    dq_table(hr_kvalues_mxfp4, B->qs, _mm256_set1_ps(dq_e8m0_half(B->e)), v);
}

/* ---- 256-element types, a super-block at a time ----
 * dqs_prep_<type> decodes a row's super-block header once: the multiplier d[g] and min
 * m[g] of every scale group g (the products hr_dequant_row forms: d * scale, dmin * min;
 * groups of 16 elements, or 32 for Q4_K, Q5_K, IQ4_XS: DQ_G32),
 * so the eight sub-blocks then need no scalar work. dqs_q_<type>(st, sb) gives sub-block
 * sb's 32 integer values as signed bytes (low 128-bit lane elements 0-15); the caller
 * widens them and forms q * d[g] (- m[g]) with separate roundings, as dequant.c does.
 * sb is a constant once the callers' loops unroll, so shifts and offsets are immediates. */
typedef struct dq_sb {
    const uint8_t *q, *h; /* the quants, and high bits / hmask where the type has them */
    float d[16], m[16];   /* per scale group */
} dq_sb;
/* Elements per scale group: 32 (1) or 16 (0). */
#define DQ_G32_q2_K 0
#define DQ_G32_q3_K 0
#define DQ_G32_q4_K 1
#define DQ_G32_q5_K 1
#define DQ_G32_q6_K 0
#define DQ_G32_iq4_xs 1

DQ_INLINE __m256i dq_ld32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
DQ_INLINE __m256i dq_b8(int v) { return _mm256_set1_epi8((char)v); }
/* Bytes >> k (k < 8) with the bits of the neighbour byte cleared by `mask`. */
DQ_INLINE __m256i dq_srb(__m256i x, int k, int mask) {
    return _mm256_and_si256(k ? _mm256_srli_epi16(x, k) : x, dq_b8(mask));
}

/* 8 bytes widened to floats, minus sub, times f: d[0..7]. */
DQ_INLINE void dq_scale8(uint64_t x, float f, int sub, float *d) {
    const __m256i i = _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)x)), _mm256_set1_epi32(sub));
    _mm256_storeu_ps(d, _mm256_mul_ps(_mm256_set1_ps(f), _mm256_cvtepi32_ps(i)));
}
DQ_INLINE void dq_scale16(uint64_t lo, uint64_t hi, float f, int sub, float *d) {
    dq_scale8(lo, f, sub, d);
    dq_scale8(hi, f, sub, d + 8);
}

/* Q4_K / Q5_K: the 12 packed bytes give scales 0-3 and mins 0-3 in their low 6 bits,
 * scales/mins 4-7 as a nibble of bytes 8-11 plus the top two bits of bytes 0-7
 * (hr_k4_scale_min, four at a time in 32-bit words). */
DQ_INLINE void dq_k4_prep(const uint8_t *sc, uint16_t dh, uint16_t mh, dq_sb *st) {
    uint32_t u[3];
    memcpy(u, sc, 12);
    const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint64_t s = (uint64_t)(u[0] & m6) | (uint64_t)((u[2] & m4) | ((u[0] >> 6) & m2) << 4) << 32;
    const uint64_t m = (uint64_t)(u[1] & m6) | (uint64_t)(((u[2] >> 4) & m4) | ((u[1] >> 6) & m2) << 4) << 32;
    dq_scale8(s, dq_h(dh), 0, st->d);
    dq_scale8(m, dq_h(mh), 0, st->m);
}
DQ_INLINE void dqs_prep_q4_K(const void *blk, dq_sb *st) {
    const hr_block_q4_K *B = blk;
    dq_k4_prep(B->scales, B->d, B->dmin, st);
    st->q = B->qs;
}
DQ_INLINE void dqs_prep_q5_K(const void *blk, dq_sb *st) {
    const hr_block_q5_K *B = blk;
    dq_k4_prep(B->scales, B->d, B->dmin, st);
    st->q = B->qs;
    st->h = B->qh;
}
/* Sub-block sb: the low (even sb) or high (odd) nibbles of qs[32 (sb / 2) ..]. */
DQ_INLINE __m256i dqs_q_q4_K(const dq_sb *st, int sb) {
    return dq_srb(dq_ld32(st->q + 32 * (sb / 2)), 4 * (sb & 1), 0x0f);
}
/* Plus 16 where bit sb of qh[l] is set. */
DQ_INLINE __m256i dqs_q_q5_K(const dq_sb *st, int sb) {
    const __m256i bit = _mm256_and_si256(dq_ld32(st->h), dq_b8(1 << sb));
    const __m256i b16 = sb < 4 ? _mm256_slli_epi16(bit, 4 - sb) : _mm256_srli_epi16(bit, sb - 4);
    return _mm256_or_si256(dqs_q_q4_K(st, sb), b16);
}

/* Q6_K: d[g] = d * scales[g]; sub-block sb = 4n + k takes the nibbles of
 * ql[64n (+32 for odd k)] (high ones for k >= 2), bits 2k of qh[32n + l], minus 32. */
DQ_INLINE void dqs_prep_q6_K(const void *blk, dq_sb *st) {
    const hr_block_q6_K *B = blk;
    const float d = dq_h(B->d);
    const __m128i s = _mm_loadu_si128((const __m128i *)B->scales);
    const __m256 vd = _mm256_set1_ps(d);
    _mm256_storeu_ps(st->d, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s))));
    _mm256_storeu_ps(st->d + 8, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(s, 8)))));
    st->q = B->ql;
    st->h = B->qh;
}
DQ_INLINE __m256i dqs_q_q6_K(const dq_sb *st, int sb) {
    const int n = sb / 4, k = sb % 4;
    const __m256i lo = dq_srb(dq_ld32(st->q + 64 * n + 32 * (k & 1)), k >= 2 ? 4 : 0, 0x0f);
    const __m256i hi = dq_srb(dq_ld32(st->h + 32 * n), 2 * k, 0x03);
    return _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), dq_b8(32));
}

/* Q2_K: d[g] = d * (scales[g] & 15), m[g] = dmin * (scales[g] >> 4); sub-block
 * sb = 4n + s takes the 2-bit fields at shift 2s of qs[32n + l]. */
DQ_INLINE void dqs_prep_q2_K(const void *blk, dq_sb *st) {
    const hr_block_q2_K *B = blk;
    uint64_t s[2];
    memcpy(s, B->scales, 16);
    const uint64_t m4 = 0x0f0f0f0f0f0f0f0full;
    dq_scale16(s[0] & m4, s[1] & m4, dq_h(B->d), 0, st->d);
    dq_scale16((s[0] >> 4) & m4, (s[1] >> 4) & m4, dq_h(B->dmin), 0, st->m);
    st->q = B->qs;
}
DQ_INLINE __m256i dqs_q_q2_K(const dq_sb *st, int sb) {
    return dq_srb(dq_ld32(st->q + 32 * (sb / 4)), 2 * (sb % 4), 0x03);
}

/* Q3_K: 16 six-bit scales minus 32 (low nibbles in bytes 0-7, top bits in bytes 8-11,
 * as dequant.c's q3_scales), d[g] = d * scale; values (qs >> 2s) & 3, minus 4 where bit
 * sb of hmask[l] is clear. */
DQ_INLINE void dqs_prep_q3_K(const void *blk, dq_sb *st) {
    const hr_block_q3_K *B = blk;
    uint64_t a;
    uint32_t h;
    memcpy(&a, B->scales, 8);
    memcpy(&h, B->scales + 8, 4);
    const uint64_t m4 = 0x0f0f0f0f0f0f0f0full;
    const uint32_t m2 = 0x03030303;
    const uint64_t hlo = (uint64_t)(h & m2) | (uint64_t)((h >> 2) & m2) << 32;
    const uint64_t hhi = (uint64_t)((h >> 4) & m2) | (uint64_t)((h >> 6) & m2) << 32;
    dq_scale16((a & m4) | hlo << 4, ((a >> 4) & m4) | hhi << 4, dq_h(B->d), 32, st->d);
    st->q = B->qs;
    st->h = B->hmask;
}
DQ_INLINE __m256i dqs_q_q3_K(const dq_sb *st, int sb) {
    const __m256i q = dq_srb(dq_ld32(st->q + 32 * (sb / 4)), 2 * (sb % 4), 0x03);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(dq_ld32(st->h), dq_b8(1 << sb)), dq_b8(1 << sb));
    return _mm256_sub_epi8(q, _mm256_andnot_si256(set, dq_b8(4)));
}

/* IQ4_XS: d[g] = d * (ls - 32) for the 6-bit ls of sub-block g / 2 (nibble of scales_l,
 * two bits of scales_h); values from the IQ4_NL table by the nibbles of qs[16 sb ..]. */
DQ_INLINE void dqs_prep_iq4_xs(const void *blk, dq_sb *st) {
    const hr_block_iq4_xs *B = blk;
    uint32_t l;
    memcpy(&l, B->scales_l, 4);
    uint64_t ls = 0;
    for (int ib = 0; ib < 8; ib++) /* unrolled: constant shifts */
        ls |= (uint64_t)(((l >> 4 * ib) & 0xF) | ((B->scales_h >> 2 * ib) & 3) << 4) << 8 * ib;
    dq_scale8(ls, dq_h(B->d), 32, st->d);
    st->q = B->qs;
}
DQ_INLINE __m256i dqs_q_iq4_xs(const dq_sb *st, int sb) {
    const __m128i tab = _mm_loadu_si128((const __m128i *)hr_kvalues_iq4nl);
    const __m128i x = _mm_loadu_si128((const __m128i *)(st->q + 16 * sb)), m = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_shuffle_epi8(tab, _mm_and_si128(x, m));
    const __m128i hi = _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(x, 4), m));
    return _mm256_set_m128i(hi, lo);
}
#endif
