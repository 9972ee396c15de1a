/* AVX-512 (F/BW/VL/DQ) axpy kernels: the AVX2 scheme with 512-bit registers, two
 * per 32-element block. A pass over the output loads the accumulator's block once,
 * dequantizes each row's block into registers (q * d, exact) and fused-multiply-adds
 * the rows in order, then stores, so HR_AXPY_ROWS rows cost one load and store of the
 * accumulator. Several tokens: each row block is dequantized once for all tokens.
 * Types of 16 (or 32) levels per block decode by table: the block's possible weights are
 * formed once with dequant.c's operations and each element's quant picks one (a permute),
 * which replaces a conversion, a multiply and a subtract per 16 weights. */
#include "sparse_axpy_impl.h"

#if defined(HR_X86) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#define BLK 32
#define NV 2 /* registers per block */

/* The 256-element types' super-block decoding (dqs_prep_*, dqs_q_*) is shared with AVX2. */
#include "sparse_axpy_dq_avx2.h"

/* The newer 32-element types by table, as Q4_0 below: the block's 16 (Q5_*: 32)
 * weights formed once with dequant.c's float operations (q * d + m, (q - 16) * d,
 * value * d), then picked per element by a permute on its quant. */
INLINE __m512 dq_iota16(float base) {
    return _mm512_add_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps(base));
}
/* The 16 bytes of qs widened: low nibbles are elements 0-15, high ones 16-31. */
INLINE __m512i dq5_qs(const uint8_t *qs) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)qs)); }

INLINE void dq5_q4_1(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_q4_1 *B = (const hr_block_q4_1 *)w + b;
    const __m512 d = _mm512_set1_ps(dq_h(B->d)), m = _mm512_set1_ps(dq_h(B->m));
    const __m512 lut = _mm512_add_ps(_mm512_mul_ps(dq_iota16(0), d), m);
    const __m512i x = dq5_qs(B->qs);
    v[0] = _mm512_permutexvar_ps(x, lut);
    v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);
}
/* Q5_0 / Q5_1: index nibble + 16 x (bit of qh), 5 bits into a two-register table. */
INLINE void dq5_five(const uint8_t *qs, const uint8_t *qh4, __m512 lo, __m512 hi, __m512 v[2]) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    const __m512i x = dq5_qs(qs), s16 = _mm512_set1_epi32(16);
    const __m512i i0 = _mm512_and_si512(x, _mm512_set1_epi32(0x0f)), i1 = _mm512_srli_epi32(x, 4);
    v[0] = _mm512_permutex2var_ps(lo, _mm512_mask_or_epi32(i0, (__mmask16)qh, i0, s16), hi);
    v[1] = _mm512_permutex2var_ps(lo, _mm512_mask_or_epi32(i1, (__mmask16)(qh >> 16), i1, s16), hi);
}
INLINE void dq5_q5_0(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_q5_0 *B = (const hr_block_q5_0 *)w + b;
    const __m512 d = _mm512_set1_ps(dq_h(B->d));
    dq5_five(B->qs, B->qh, _mm512_mul_ps(dq_iota16(-16), d), _mm512_mul_ps(dq_iota16(0), d), v);
}
INLINE void dq5_q5_1(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_q5_1 *B = (const hr_block_q5_1 *)w + b;
    const __m512 d = _mm512_set1_ps(dq_h(B->d)), m = _mm512_set1_ps(dq_h(B->m));
    dq5_five(B->qs, B->qh, _mm512_add_ps(_mm512_mul_ps(dq_iota16(0), d), m),
             _mm512_add_ps(_mm512_mul_ps(dq_iota16(16), d), m), v);
}
INLINE void dq5_table(const int8_t *table, const uint8_t *qs, float d, __m512 v[2]) {
    const __m512 tab = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)table)));
    const __m512 lut = _mm512_mul_ps(tab, _mm512_set1_ps(d));
    const __m512i x = dq5_qs(qs);
    v[0] = _mm512_permutexvar_ps(x, lut);
    v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);
}
INLINE void dq5_iq4_nl(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_iq4_nl *B = (const hr_block_iq4_nl *)w + b;
    dq5_table(hr_kvalues_iq4nl, B->qs, dq_h(B->d), v);
}
INLINE void dq5_mxfp4(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_mxfp4 *B = (const hr_block_mxfp4 *)w + b;
    dq5_table(hr_kvalues_mxfp4, B->qs, dq_e8m0_half(B->e), v);
}

/* ---- 32 weights of block b as two registers, and one weight as a float ---- */
INLINE void dq_f32(const void *w, int64_t b, __m512 v[2]) {
    const float *p = (const float *)w + b * BLK;
    v[0] = _mm512_loadu_ps(p);
    v[1] = _mm512_loadu_ps(p + 16);
}
INLINE void dq_f16(const void *w, int64_t b, __m512 v[2]) {
    const uint16_t *p = (const uint16_t *)w + b * BLK;
    v[0] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    v[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 16)));
}
INLINE void dq_bf16(const void *w, int64_t b, __m512 v[2]) {
    const uint16_t *p = (const uint16_t *)w + b * BLK;
    _Pragma("GCC unroll 4") for (int j = 0; j < 2; j++) {
        __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p + 16 * j)));
        v[j] = _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
    }
}
INLINE void dq_q8_0(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_q8_0 *B = (const hr_block_q8_0 *)w + b;
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(B->d));
    _Pragma("GCC unroll 4") for (int j = 0; j < 2; j++) {
        __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(B->qs + 16 * j)));
        v[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(q), d);
    }
}
/* Q4_0 by table: the 16 values (q - 8) * d of the block (exactly hr_dequant_row's),
 * picked per element by its nibble. Bytes widen to dwords; the permute reads only the
 * low 4 bits of each, so the low nibbles need no mask and the high ones one shift. */
INLINE void dq_q4_0(const void *w, int64_t b, __m512 v[2]) {
    const hr_block_q4_0 *B = (const hr_block_q4_0 *)w + b;
    const __m512 q8 = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512 lut = _mm512_mul_ps(q8, _mm512_cvtph_ps(_mm256_set1_epi16((short)B->d)));
    __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)B->qs));
    v[0] = _mm512_permutexvar_ps(x, lut);                        /* x[0..15] */
    v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);  /* x[16..31] */
}

INLINE uint16_t u16(const void *w, int64_t k) {
    uint16_t h;
    memcpy(&h, (const char *)w + 2 * k, 2);
    return h;
}
INLINE float sc_f32(const void *w, int64_t k) {
    float f;
    memcpy(&f, (const char *)w + 4 * k, 4);
    return f;
}
INLINE float sc_f16(const void *w, int64_t k) { return _cvtsh_ss(u16(w, k)); }
INLINE float sc_bf16(const void *w, int64_t k) { return hr_bf16_to_f32(u16(w, k)); }
INLINE float sc_none(const void *w, int64_t k) { (void)w, (void)k; return 0.0f; } /* block types: no tail */

/* Software prefetch AX_PF_AHEAD bytes ahead along each row, one per cache line and
 * never past the row's end (the next row in memory is usually not an active one);
 * the driver prefetches the start of the next rows. */
#ifndef AX_PF_AHEAD
#define AX_PF_AHEAD 768
#endif
INLINE void pf_ahead(const void *row, int64_t b, int64_t nb, size_t bs) {
    const size_t o = (size_t)b * bs + AX_PF_AHEAD;
    if (o >= (size_t)nb * bs) return;
    if (bs >= 64) {
        for (size_t q = 0; q < bs; q += 64) _mm_prefetch((const char *)row + o + q, _MM_HINT_T0);
    } else if ((o & 63) < bs) {
        _mm_prefetch((const char *)row + o, _MM_HINT_T0);
    }
}

/* The next call's rows (ax_decode passes them), fetched at the offset this call reads:
 * a call's worth of lead, spread over the call like a hardware stream's requests. Into L2
 * (T1): more misses can be in flight there than in L1's fill buffers; F16 at 10% of 11008
 * rows of 4096 on one Zen 4 core went from 52-57% of the dense kernel's GB/s to 77-84%
 * (bench/sparse.c, docs/performance.md). */
#ifndef AX_PF_NEXT
#define AX_PF_NEXT 1
#endif
#ifndef AX_NEXT_HINT
#define AX_NEXT_HINT _MM_HINT_T1
#endif
INLINE void pf_next(const void *const *nx, int r, size_t o, size_t bs) {
    if (!AX_PF_NEXT || !nx) return;
    if (bs >= 64) {
        for (size_t q = 0; q < bs; q += 64) _mm_prefetch((const char *)nx[r] + o + q, AX_NEXT_HINT);
    } else if ((o & 63) < bs) {
        _mm_prefetch((const char *)nx[r] + o, AX_NEXT_HINT);
    }
}

/* One token, R rows, every coefficient non-zero. */
#define AXPY_T1(DQ, SC, BS, R)                                                                      \
    do {                                                                                            \
        __m512 av[R];                                                                               \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) av[r] = _mm512_set1_ps(a[r]);           \
        const int64_t nb = n / BLK;                                                                 \
        for (int64_t b = 0; b < nb; b++) {                                                          \
            float *yb = y + b * BLK;                                                                \
            __m512 acc[NV];                                                                         \
            _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) acc[j] = _mm512_loadu_ps(yb + 16 * j); \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                __m512 v[NV];                                                                       \
                pf_ahead(w[r], b, nb, BS);                                                          \
                pf_next(nx, r, (size_t)b * BS, BS);                                                 \
                DQ(w[r], b, v);                                                                     \
                _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++)                                \
                    acc[j] = _mm512_fmadd_ps(v[j], av[r], acc[j]);                                  \
            }                                                                                       \
            _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) _mm512_storeu_ps(yb + 16 * j, acc[j]); \
        }                                                                                           \
        for (int64_t k = nb * BLK; k < n; k++)                                                      \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) y[k] = fmaf(SC(w[r], k), a[r], y[k]); \
    } while (0)

/* Any number of tokens, R rows; coefficients a[t*HR_AXPY_ROWS + r], zeros skipped. */
#define AXPY_TN(DQ, SC, BS, R)                                                                      \
    do {                                                                                            \
        const int64_t nb = n / BLK;                                                                 \
        for (int64_t b = 0; b < nb; b++) {                                                          \
            __m512 v[R][NV];                                                                        \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                pf_ahead(w[r], b, nb, BS);                                                          \
                pf_next(nx, r, (size_t)b * BS, BS);                                                 \
                DQ(w[r], b, v[r]);                                                                  \
            }                                                                                       \
            for (int64_t t = 0; t < n_tok; t++) {                                                   \
                float *yb = y + t * ys + b * BLK;                                                   \
                const float *at = a + t * HR_AXPY_ROWS;                                             \
                __m512 acc[NV];                                                                     \
                _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) acc[j] = _mm512_loadu_ps(yb + 16 * j); \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                               \
                    if (at[r] == 0.0f) continue;                                                    \
                    const __m512 s = _mm512_set1_ps(at[r]);                                         \
                    _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++)                            \
                        acc[j] = _mm512_fmadd_ps(v[r][j], s, acc[j]);                               \
                }                                                                                   \
                _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) _mm512_storeu_ps(yb + 16 * j, acc[j]); \
            }                                                                                       \
        }                                                                                           \
        for (int64_t k = nb * BLK; k < n; k++)                                                      \
            for (int64_t t = 0; t < n_tok; t++)                                                     \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                 \
                    if (a[t * HR_AXPY_ROWS + r] != 0.0f)                                            \
                        y[t * ys + k] = fmaf(SC(w[r], k), a[t * HR_AXPY_ROWS + r], y[t * ys + k]);  \
    } while (0)

#include "sparse_axpy_entry.h"

/* ---- Q4_0, one token: 8 blocks (144 bytes) of every row per step ----
 * Per block the generic loop spent three of its nine vector operations on the scale
 * (a word broadcast, an F16 conversion, the table's multiply). Here a row's 8 scales
 * come out of two loads with one word permute and one conversion (as the dot kernels'
 * w_grp_q4_0), and each block's table is one multiply by a broadcast from memory; the
 * values (q - 8) * d, and so the results, are dq_q4_0's. The prefetches go once per
 * group and cache line instead of a test per block. */
#define Q4G 8
INLINE void q4_0_scales8(const char *w, float *d8) {
    const __m512i i = _mm512_setr_epi32(0x00090000, 0x001b0012, 0x002d0024, 0x003f0036, 0, 0, 0, 0, 0, 0, 0, 0,
                                        0, 0, 0, 0); /* words 0, 9, ..., 63 */
    const __m512i s = _mm512_permutex2var_epi16(_mm512_loadu_si512(w), i, _mm512_loadu_si512(w + 64));
    _mm256_store_ps(d8, _mm256_cvtph_ps(_mm512_castsi512_si128(s)));
}
INLINE void q4_0_blk(const char *blk, float d, __m512 v[2]) {
    const __m512 q8 = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512 lut = _mm512_mul_ps(q8, _mm512_set1_ps(d));
    const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
    v[0] = _mm512_permutexvar_ps(x, lut);
    v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);
}
/* The lines of bytes [o, o + 144) of a row (the last one may come with the next group). */
#define PF_GRP(p, o, hint)                                                                          \
    do {                                                                                            \
        _mm_prefetch((const char *)(p) + (o), hint);                                                \
        _mm_prefetch((const char *)(p) + (o) + 64, hint);                                           \
        _mm_prefetch((const char *)(p) + (o) + 128, hint);                                          \
    } while (0)

/* The scales are read back from memory: a broadcast load is free of the shuffle unit the
 * table's permutes need, where GCC would keep them in registers and shuffle each out. */
#define Q4_OPAQUE(v) __asm__("" : "+m"(v))
#define AXPY_T1_Q4_0(DQ, SC, BS, R)                                                                 \
    do {                                                                                            \
        __m512 av[R];                                                                               \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) av[r] = _mm512_set1_ps(a[r]);           \
        const int64_t nb = n / BLK;                                                                 \
        const size_t end = (size_t)nb * BS;                                                         \
        _Alignas(32) float d8[R][Q4G];                                                              \
        int64_t b = 0;                                                                              \
        for (; b + Q4G <= nb; b += Q4G) {                                                           \
            const size_t o = (size_t)b * BS;                                                        \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                if (o + AX_PF_AHEAD + 2 * 64 < end) PF_GRP(w[r], o + AX_PF_AHEAD, _MM_HINT_T0);     \
                if (AX_PF_NEXT && nx) PF_GRP(nx[r], o, AX_NEXT_HINT);                               \
                q4_0_scales8((const char *)w[r] + o, d8[r]);                                        \
            }                                                                                       \
            Q4_OPAQUE(d8);                                                                          \
            _Pragma("GCC unroll 8") for (int k = 0; k < Q4G; k++) {                                 \
                float *yb = y + (b + k) * BLK;                                                      \
                __m512 acc[NV];                                                                     \
                _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) acc[j] = _mm512_loadu_ps(yb + 16 * j); \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                               \
                    __m512 v[NV];                                                                   \
                    q4_0_blk((const char *)w[r] + o + k * BS, d8[r][k], v);                         \
                    _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++)                            \
                        acc[j] = _mm512_fmadd_ps(v[j], av[r], acc[j]);                              \
                }                                                                                   \
                _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) _mm512_storeu_ps(yb + 16 * j, acc[j]); \
            }                                                                                       \
        }                                                                                           \
        for (; b < nb; b++) {                                                                       \
            float *yb = y + b * BLK;                                                                \
            __m512 acc[NV];                                                                         \
            _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) acc[j] = _mm512_loadu_ps(yb + 16 * j); \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                __m512 v[NV];                                                                       \
                pf_next(nx, r, (size_t)b * BS, BS);                                                 \
                DQ(w[r], b, v);                                                                     \
                _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++)                                \
                    acc[j] = _mm512_fmadd_ps(v[j], av[r], acc[j]);                                  \
            }                                                                                       \
            _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) _mm512_storeu_ps(yb + 16 * j, acc[j]); \
        }                                                                                           \
    } while (0)


/* ---- 256-element types: one super-block of every row per step ----
 * Each row's super-block header is decoded once (dqs_prep_* of sparse_axpy_dq_avx2.h),
 * then the eight 32-element sub-blocks follow with constant offsets and shifts. */
/* The scale group of sub-block sb's half h (16 elements). */
#define DQ_G(TYPE, sb, h) (DQ_G32_##TYPE ? (sb) : 2 * (sb) + (h))
#define DQS(TYPE, MIN)                                                                              \
    INLINE void dqs_##TYPE(const dq_sb *st, int sb, __m512 v[2]) {                                  \
        const __m256i q = dqs_q_##TYPE(st, sb);                                                     \
        const __m128i part[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};        \
        _Pragma("GCC unroll 2") for (int j = 0; j < 2; j++) {                                       \
            const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(part[j]));                     \
            const __m512 p = _mm512_mul_ps(_mm512_set1_ps(st->d[DQ_G(TYPE, sb, j)]), x);                     \
            v[j] = MIN ? _mm512_sub_ps(p, _mm512_set1_ps(st->m[DQ_G(TYPE, sb, j)])) : p;                     \
        }                                                                                           \
    }
DQS(q2_K, 1)
DQS(q3_K, 0)
DQS(q6_K, 0)

/* Types of 16 levels per 32-element sub-block: the 16 weights d * q - m (exactly
 * dequant.c's products and differences) formed once in a register, then picked per
 * element by its quant (a permute reads an index's low 4 bits; Q5_K's 32 levels take
 * two registers and 5 bits). A permute replaces a conversion, a multiply and a subtract. */
INLINE __m512 dq_lut(const dq_sb *st, int sb, int base) {
    return _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(st->d[sb]), dq_iota16((float)base)), _mm512_set1_ps(st->m[sb]));
}
INLINE void dqs_q4_K(const dq_sb *st, int sb, __m512 v[2]) {
    const __m512 lut = dq_lut(st, sb, 0);
    const __m128i *qs = (const __m128i *)(st->q + 32 * (sb / 2));
    _Pragma("GCC unroll 2") for (int j = 0; j < 2; j++) {
        const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128(qs + j));
        v[j] = _mm512_permutexvar_ps(sb & 1 ? _mm512_srli_epi32(x, 4) : x, lut);
    }
}
INLINE void dqs_q5_K(const dq_sb *st, int sb, __m512 v[2]) {
    const __m512 lo = dq_lut(st, sb, 0), hi = dq_lut(st, sb, 16);
    const __m256i q = dqs_q_q5_K(st, sb);
    const __m128i part[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
    _Pragma("GCC unroll 2") for (int j = 0; j < 2; j++)
        v[j] = _mm512_permutex2var_ps(lo, _mm512_cvtepu8_epi32(part[j]), hi);
}
/* IQ4_XS: the table's 16 values times the sub-block's dl (dl * value, as dequant.c). */
INLINE void dqs_iq4_xs(const dq_sb *st, int sb, __m512 v[2]) {
    const __m512 tab = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)hr_kvalues_iq4nl)));
    const __m512 lut = _mm512_mul_ps(_mm512_set1_ps(st->d[sb]), tab);
    const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(st->q + 16 * sb)));
    v[0] = _mm512_permutexvar_ps(x, lut);
    v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);
}

/* Prefetch super-block s + AX_PF_AHEAD / bb's lines of a row (not past its end). */
INLINE void pf_sb(const void *row, int64_t s, int64_t ns, size_t bb) {
    const size_t o = (size_t)s * bb + AX_PF_AHEAD, end = (size_t)ns * bb;
    _Pragma("GCC unroll 4") for (size_t q = 0; q < bb; q += 64)
        if (o + q < end) _mm_prefetch((const char *)row + o + q, _MM_HINT_T0);
}

#define AXPY_K_T1(TYPE, R)                                                                          \
    do {                                                                                            \
        __m512 av[R];                                                                               \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) av[r] = _mm512_set1_ps(a[r]);           \
        const int64_t ns = n / HR_QK_K;                                                             \
        const size_t bb = sizeof(hr_block_##TYPE);                                                  \
        dq_sb st[R];                                                                                \
        for (int64_t s = 0; s < ns; s++) {                                                          \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                pf_sb(w[r], s, ns, bb);                                                             \
                pf_next(nx, r, (size_t)s * bb, bb);                                                 \
                dqs_prep_##TYPE((const char *)w[r] + s * bb, &st[r]);                               \
            }                                                                                       \
            _Pragma("GCC unroll 8") for (int sb = 0; sb < 8; sb++) {                                \
                float *yb = y + s * HR_QK_K + 32 * sb;                                              \
                __m512 acc[NV];                                                                     \
                _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) acc[j] = _mm512_loadu_ps(yb + 16 * j); \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                               \
                    __m512 v[NV];                                                                   \
                    dqs_##TYPE(&st[r], sb, v);                                                      \
                    _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++)                            \
                        acc[j] = _mm512_fmadd_ps(v[j], av[r], acc[j]);                              \
                }                                                                                   \
                _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) _mm512_storeu_ps(yb + 16 * j, acc[j]); \
            }                                                                                       \
        }                                                                                           \
    } while (0)

#define AXPY_K_TN(TYPE, R)                                                                          \
    do {                                                                                            \
        const int64_t ns = n / HR_QK_K;                                                             \
        const size_t bb = sizeof(hr_block_##TYPE);                                                  \
        dq_sb st[R];                                                                                \
        for (int64_t s = 0; s < ns; s++) {                                                          \
            _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                   \
                pf_sb(w[r], s, ns, bb);                                                             \
                pf_next(nx, r, (size_t)s * bb, bb);                                                 \
                dqs_prep_##TYPE((const char *)w[r] + s * bb, &st[r]);                               \
            }                                                                                       \
            _Pragma("GCC unroll 8") for (int sb = 0; sb < 8; sb++) {                                \
                __m512 v[R][NV];                                                                    \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) dqs_##TYPE(&st[r], sb, v[r]);   \
                for (int64_t t = 0; t < n_tok; t++) {                                               \
                    float *yb = y + t * ys + s * HR_QK_K + 32 * sb;                                 \
                    const float *at = a + t * HR_AXPY_ROWS;                                         \
                    __m512 acc[NV];                                                                 \
                    _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) acc[j] = _mm512_loadu_ps(yb + 16 * j); \
                    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                           \
                        if (at[r] == 0.0f) continue;                                                \
                        const __m512 c = _mm512_set1_ps(at[r]);                                     \
                        _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++)                        \
                            acc[j] = _mm512_fmadd_ps(v[r][j], c, acc[j]);                           \
                    }                                                                               \
                    _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) _mm512_storeu_ps(yb + 16 * j, acc[j]); \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    } while (0)


/* ---- a batch's panel of rows (hr_axpy_panel_fn) ----
 * Per block of 32 outputs and T tokens, 2T accumulators stay in registers while every row of
 * the panel adds its term (the block decoded once for the T tokens), so the outputs are read
 * and written once per panel instead of once per HR_AXPY_ROWS rows. A zero coefficient's
 * term is masked off, as AXPY_TN skips it. While reading block b of a row, the line PANEL_PF
 * bytes on is fetched into L2: the next blocks' sweep finds it there. */
#define PANEL_T 8
#define PANEL_PF 256
/* The T tokens' accumulators of one block of 32 outputs (y: the first token's). */
INLINE void panel_ld(__m512 acc[][NV], const float *y, size_t ys, const int T) {
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
        _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) acc[t][j] = _mm512_loadu_ps(y + t * ys + 16 * j);
}
INLINE void panel_st(__m512 acc[][NV], float *y, size_t ys, const int T) {
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++)
        _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) _mm512_storeu_ps(y + t * ys + 16 * j, acc[t][j]);
}
/* One row's decoded block v times each token's coefficient a[t * as], added where non-zero. */
INLINE void panel_add(__m512 acc[][NV], const __m512 v[NV], const float *a, size_t as, const int T) {
    _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
        const __m512 c = _mm512_set1_ps(a[t * as]);
        const __mmask16 m = _mm512_cmpneq_ps_mask(c, _mm512_setzero_ps());
        _Pragma("GCC unroll 2") for (int j = 0; j < NV; j++) acc[t][j] = _mm512_mask3_fmadd_ps(v[j], c, acc[t][j], m);
    }
}
#define AXPY_PANEL_BODY(DQ, BS, T)                                                                  \
    do {                                                                                            \
        const int64_t nb = n / BLK;                                                                 \
        const size_t rbytes = (size_t)nb * BS;                                                      \
        for (int64_t b = 0; b < nb; b++) {                                                          \
            __m512 acc[T][NV];                                                                      \
            panel_ld(acc, y + b * BLK, ys, T);                                                      \
            const size_t pf = (size_t)b * BS + PANEL_PF;                                            \
            for (int r = 0; r < n_rows; r++) {                                                      \
                __m512 v[NV];                                                                       \
                if (pf < rbytes) _mm_prefetch((const char *)w[r] + pf, _MM_HINT_T1);                \
                DQ(w[r], b, v);                                                                     \
                panel_add(acc, v, a + r, as, T);                                                    \
            }                                                                                       \
            panel_st(acc, y + b * BLK, ys, T);                                                      \
        }                                                                                           \
    } while (0)

/* The rows' first lines at once: the first sweep over the panel would meet them cold. */
INLINE void panel_prefetch(const void *const *w, int n_rows, size_t rbytes) {
    for (int r = 0; r < n_rows; r++)
        for (size_t o = 0; o < rbytes && o < PANEL_PF; o += 64) _mm_prefetch((const char *)w[r] + o, _MM_HINT_T1);
}

#define AXPY_PANEL(NAME, DQ, BS)                                                                    \
    INLINE void panel_##NAME##_t(int64_t n, int n_rows, const void *const *w, const float *a, size_t as, \
                                 float *y, size_t ys, const int T) {                                \
        switch (T) {                                                                                \
        case 8: AXPY_PANEL_BODY(DQ, BS, 8); break;                                                  \
        case 4: AXPY_PANEL_BODY(DQ, BS, 4); break;                                                  \
        case 2: AXPY_PANEL_BODY(DQ, BS, 2); break;                                                  \
        default: AXPY_PANEL_BODY(DQ, BS, 1); break;                                                 \
        }                                                                                           \
    }                                                                                               \
    static void panel_##NAME(int64_t n, int n_rows, const void *const *w, const float *a, size_t as,  \
                             int64_t n_tok, float *y, size_t ys) {                                  \
        panel_prefetch(w, n_rows, (size_t)(n / BLK) * BS);                                          \
        for (int64_t t = 0; t < n_tok;) {                                                           \
            const int T = n_tok - t >= 8 ? 8 : n_tok - t >= 4 ? 4 : n_tok - t >= 2 ? 2 : 1;         \
            panel_##NAME##_t(n, n_rows, w, a + t * as, as, y + t * ys, ys, T);                      \
            t += T;                                                                                 \
        }                                                                                           \
    }

AXPY_FUNCS(f32, dq_f32, sc_f32, 128)
AXPY_FUNCS(f16, dq_f16, sc_f16, 64)
AXPY_FUNCS(bf16, dq_bf16, sc_bf16, 64)
AXPY_FUNCS(q8_0, dq_q8_0, sc_none, sizeof(hr_block_q8_0))
AXPY_ENTRIES(q4_0, AXPY_T1_Q4_0, AXPY_TN, dq_q4_0, sc_none, sizeof(hr_block_q4_0))
AXPY_FUNCS(q4_1, dq5_q4_1, sc_none, sizeof(hr_block_q4_1))
AXPY_FUNCS(q5_0, dq5_q5_0, sc_none, sizeof(hr_block_q5_0))
AXPY_FUNCS(q5_1, dq5_q5_1, sc_none, sizeof(hr_block_q5_1))
AXPY_FUNCS(iq4_nl, dq5_iq4_nl, sc_none, sizeof(hr_block_iq4_nl))
AXPY_FUNCS(mxfp4, dq5_mxfp4, sc_none, sizeof(hr_block_mxfp4))
/* The 256-element types' panel: each row's super-block header decoded once for the panel
 * (dqs_prep_*, into st), then per sub-block the 32-element panel body over the decoded rows. */
#define AXPY_K_PANEL_BODY(TYPE, T)                                                                  \
    _Pragma("GCC unroll 8") for (int sb = 0; sb < 8; sb++) {                                        \
        __m512 acc[T][NV];                                                                          \
        panel_ld(acc, y + 32 * sb, ys, T);                                                          \
        for (int r = 0; r < n_rows; r++) {                                                          \
            __m512 v[NV];                                                                           \
            dqs_##TYPE(&st[r], sb, v);                                                              \
            panel_add(acc, v, a + r, as, T);                                                        \
        }                                                                                           \
        panel_st(acc, y + 32 * sb, ys, T);                                                          \
    }

#define AXPY_K_PANEL(TYPE)                                                                          \
    INLINE void panel_##TYPE##_t(const dq_sb *st, int n_rows, const float *a, size_t as, float *y,  \
                                 size_t ys, const int T) {                                          \
        switch (T) {                                                                                \
        case 8: { AXPY_K_PANEL_BODY(TYPE, 8) } break;                                               \
        case 4: { AXPY_K_PANEL_BODY(TYPE, 4) } break;                                               \
        case 2: { AXPY_K_PANEL_BODY(TYPE, 2) } break;                                               \
        default: { AXPY_K_PANEL_BODY(TYPE, 1) } break;                                              \
        }                                                                                           \
    }                                                                                               \
    static void panel_##TYPE(int64_t n, int n_rows, const void *const *w, const float *a, size_t as, \
                             int64_t n_tok, float *y, size_t ys) {                                  \
        const int64_t ns = n / HR_QK_K;                                                             \
        const size_t bb = sizeof(hr_block_##TYPE);                                                  \
        dq_sb st[HR_AXPY_PANEL_MAX];                                                                      \
        for (int64_t s = 0; s < ns; s++) {                                                          \
            for (int r = 0; r < n_rows; r++) {                                                      \
                pf_sb(w[r], s, ns, bb);                                                             \
                dqs_prep_##TYPE((const char *)w[r] + s * bb, &st[r]);                               \
            }                                                                                       \
            for (int64_t t = 0; t < n_tok;) {                                                       \
                const int T = n_tok - t >= 8 ? 8 : n_tok - t >= 4 ? 4 : n_tok - t >= 2 ? 2 : 1;     \
                panel_##TYPE##_t(st, n_rows, a + t * as, as, y + t * ys + s * HR_QK_K, ys, T);      \
                t += T;                                                                             \
            }                                                                                       \
        }                                                                                           \
    }

AXPY_K_FUNCS(q2_K)
AXPY_K_FUNCS(q3_K)
AXPY_K_FUNCS(q4_K)
AXPY_K_FUNCS(q5_K)
AXPY_K_FUNCS(q6_K)
AXPY_K_FUNCS(iq4_xs)
AXPY_PANEL(f32, dq_f32, 128)
AXPY_PANEL(f16, dq_f16, 64)
AXPY_PANEL(bf16, dq_bf16, 64)
AXPY_PANEL(q8_0, dq_q8_0, sizeof(hr_block_q8_0))
AXPY_PANEL(q4_0, dq_q4_0, sizeof(hr_block_q4_0))
AXPY_PANEL(q4_1, dq5_q4_1, sizeof(hr_block_q4_1))
AXPY_PANEL(q5_0, dq5_q5_0, sizeof(hr_block_q5_0))
AXPY_PANEL(q5_1, dq5_q5_1, sizeof(hr_block_q5_1))
AXPY_PANEL(iq4_nl, dq5_iq4_nl, sizeof(hr_block_iq4_nl))
AXPY_PANEL(mxfp4, dq5_mxfp4, sizeof(hr_block_mxfp4))
AXPY_K_PANEL(q2_K)
AXPY_K_PANEL(q3_K)
AXPY_K_PANEL(q4_K)
AXPY_K_PANEL(q5_K)
AXPY_K_PANEL(q6_K)
AXPY_K_PANEL(iq4_xs)

static const hr_axpy_kernels ax_avx512 = {
    .name = "avx512",
    .axpy = {[HR_F32] = axpy_f32, [HR_F16] = axpy_f16, [HR_BF16] = axpy_bf16, [HR_Q8_0] = axpy_q8_0,
             [HR_Q4_0] = axpy_q4_0, [HR_Q4_1] = axpy_q4_1, [HR_Q5_0] = axpy_q5_0, [HR_Q5_1] = axpy_q5_1,
             [HR_IQ4_NL] = axpy_iq4_nl, [HR_MXFP4] = axpy_mxfp4, [HR_Q2_K] = axpy_q2_K, [HR_Q3_K] = axpy_q3_K,
             [HR_Q4_K] = axpy_q4_K, [HR_Q5_K] = axpy_q5_K, [HR_Q6_K] = axpy_q6_K, [HR_IQ4_XS] = axpy_iq4_xs},
    .panel = {[HR_F32] = panel_f32, [HR_F16] = panel_f16, [HR_BF16] = panel_bf16, [HR_Q8_0] = panel_q8_0,
              [HR_Q4_0] = panel_q4_0, [HR_Q4_1] = panel_q4_1, [HR_Q5_0] = panel_q5_0, [HR_Q5_1] = panel_q5_1,
              [HR_IQ4_NL] = panel_iq4_nl, [HR_MXFP4] = panel_mxfp4, [HR_Q2_K] = panel_q2_K, [HR_Q3_K] = panel_q3_K,
              [HR_Q4_K] = panel_q4_K, [HR_Q5_K] = panel_q5_K, [HR_Q6_K] = panel_q6_K, [HR_IQ4_XS] = panel_iq4_xs},
};

const hr_axpy_kernels *hr_axpy_table_avx512(void) { return &ax_avx512; }
#else
const hr_axpy_kernels *hr_axpy_table_avx512(void) { return NULL; }
#endif
