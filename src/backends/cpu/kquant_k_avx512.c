/* AVX-512 (F/BW/VL/DQ + VNNI) kernels of the K-quants and IQ4_XS against Q8_K.
 *
 * The scheme of kquant_k_avx2.c, 64 bytes at a time: maddubs forms 16-bit pair sums of
 * unsigned codes times int8 activations and vpdpwssd multiplies them by the 16-bit
 * sub-block scales and adds them into 32-bit lanes in one step. IQ4_XS, whose levels are
 * signed, uses vpdpbusd on the levels + 128 (exact 32-bit sums) and takes 128 * sum(x)
 * back out through the bsums. Offsets (mins, Q3_K's -4, Q6_K's -32) come from the bsums
 * once per super-block, as in AVX2. One 16-lane float accumulator per (row, token); vec_dot,
 * rows4 and tile run the same super-block function in the same order, so they agree bit
 * for bit. Where a 512-bit register of codes holds elements that are not contiguous in
 * x, the activation side is permuted to match (a lane shuffle), not the weights. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512vnni")))
#define INLINE static inline __attribute__((always_inline)) TGT
#define UNROLL _Pragma("GCC unroll 8")
#include "kquant_k_x86.h"

INLINE __m512i ld512(const void *p) { return _mm512_loadu_si512(p); }
/* two 32-byte pieces as one register: a in the low half */
INLINE __m512i join256(const void *a, const void *b) { return _mm512_inserti64x4(_mm512_castsi256_si512(ld256(a)), ld256(b), 1); }
INLINE __m512 fma_int(__m512 acc, float d, __m512i v) { return _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(v), acc); }
INLINE __m512 fma_int8(__m512 acc, float d, __m256i v) { return fma_int(acc, d, _mm512_zextsi256_si512(v)); }
/* 32 int16: 128-bit lane i takes int16 a_i of the same lane of b (an in-lane byte shuffle:
 * cheaper than a cross-lane word permute, so b is laid out per super-block to suit) */
INLINE int pat16(int a) { return (2 * a) | (2 * a + 1) << 8 | (2 * a) << 16 | (2 * a + 1) << 24; }
INLINE __m512i pick16(__m512i b, int a0, int a1, int a2, int a3) {
    const __m512i idx = _mm512_setr_epi32(pat16(a0), pat16(a0), pat16(a0), pat16(a0), pat16(a1), pat16(a1), pat16(a1),
                                          pat16(a1), pat16(a2), pat16(a2), pat16(a2), pat16(a2), pat16(a3), pat16(a3),
                                          pat16(a3), pat16(a3));
    return _mm512_shuffle_epi8(b, idx);
}
/* the 8 int16 at v in every 128-bit lane */
INLINE __m512i bcast8x16(__m128i v) { return _mm512_broadcast_i32x4(v); }
/* codes c (bytes) + add where bit b0 (low 256 bits) / b1 (high 256 bits) of hb is set */
INLINE __m512i add_bit(__m512i c, __m512i hb, int b0, int b1, int add) {
    const __m512i m = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << b0)), _mm256_set1_epi8((char)(1 << b1)), 1);
    return _mm512_mask_add_epi8(c, _mm512_test_epi8_mask(hb, m), c, _mm512_set1_epi8((char)add));
}
/* sumi += (codes . x) * scales, codes unsigned */
INLINE __m512i dot_scaled(__m512i sumi, __m512i codes, __m512i x, __m512i sc) {
    return _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(codes, x), sc);
}

/* ---- Q2_K / Q3_K: register k holds shift 2k of both 32-byte halves of qs: elements
 * 32k.. (sub-blocks 2k, 2k+1) and 128+32k.. (8+2k, 9+2k) ---- */
INLINE __m512i q23_sum(const uint8_t *qs, __m256i sc16, const uint8_t *hmask, const hr_block_q8_K *x) {
    const __m512i q = ld512(qs), m3 = _mm512_set1_epi8(3);
    const __m512i hb = hmask ? _mm512_broadcast_i64x4(ld256(hmask)) : _mm512_setzero_si512();
    /* lanes: scales 0-7, 0-7, 8-15, 8-15 */
    const __m512i sc = _mm512_shuffle_i64x2(_mm512_castsi256_si512(sc16), _mm512_castsi256_si512(sc16), 0x50);
    __m512i sumi = _mm512_setzero_si512();
    UNROLL for (int k = 0; k < 4; k++) {
        __m512i c = _mm512_and_si512(_mm512_srli_epi16(q, 2 * k), m3);
        if (hmask) c = add_bit(c, hb, k, 4 + k, 4);
        const __m512i xv = join256(x->qs + 32 * k, x->qs + 128 + 32 * k);
        sumi = dot_scaled(sumi, c, xv, pick16(sc, 2 * k, 2 * k + 1, 2 * k, 2 * k + 1));
    }
    return sumi;
}

INLINE __m512 sb_q2_K(const hr_block_q2_K *w, const hr_block_q8_K *x, __m512 acc) {
    const __m128i sm = ld128(w->scales), m4 = _mm_set1_epi8(0x0f);
    const __m256i sc = _mm256_cvtepu8_epi16(_mm_and_si128(sm, m4));
    const __m256i mins = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4)), ld256(x->bsums));
    const float dx = x->d;
    acc = fma_int(acc, dx * _cvtsh_ss(w->d), q23_sum(w->qs, sc, NULL, x));
    return fma_int8(acc, -dx * _cvtsh_ss(w->dmin), mins);
}

/* code = low | high << 2 is the value + 4: the -4 goes into the bsums term */
INLINE __m512 sb_q3_K(const hr_block_q3_K *w, const hr_block_q8_K *x, __m512 acc) {
    const __m256i sc = _mm256_cvtepi8_epi16(q3_scales(w->scales));
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc, ld256(x->bsums)), 2);
    const __m512i sumi = _mm512_sub_epi32(q23_sum(w->qs, sc, w->hmask, x), _mm512_zextsi256_si512(off));
    return fma_int(acc, x->d * _cvtsh_ss(w->d), sumi);
}

/* A Q8_K block re-laid once per batch for the tiles (tile_xprep): qs in the lane order the
 * weight type's registers use, so the tile loads it as is, and 64-byte aligned so no load
 * crosses a cache line. */
typedef struct { int8_t qs[HR_QK_K]; int16_t bsums[HR_QK_K / 16]; float d; uint8_t pad[28]; } q8Kt;
_Static_assert(sizeof(q8Kt) == 320, "q8Kt is 5 cache lines");

/* ---- Q4_K / Q5_K: register h holds qs[64h..]: low nibbles are sub-blocks 4h (low half)
 * and 4h+2 (high half), high nibbles 4h+1 and 4h+3. Split in a weight half (codes, scale
 * patterns, mins: decoded once per super-block and row) and an activation half, so a tile
 * decodes each weight super-block once for all its tokens ---- */
/* dv = d and ndv = -dmin in every lane: d_x * d (and -d_x * dmin, the same value as
 * (-d_x) * dmin) then take one vector multiply per token */
typedef struct { __m512i c[4], sc[4]; __m256i md; __m512 dv, ndv; } k45w;
INLINE void k45_w(k45w *o, const uint8_t *qs, const uint8_t *qh, const uint8_t *scales, uint16_t d, uint16_t dmin) {
    const __m256i scm = k4_scales_mins(scales);
    const __m512i sc = bcast8x16(_mm256_castsi256_si128(scm)), m4 = _mm512_set1_epi8(0x0f);
    const __m512i hb = qh ? _mm512_broadcast_i64x4(ld256(qh)) : _mm512_setzero_si512();
    UNROLL for (int h = 0; h < 2; h++) {
        const __m512i q = ld512(qs + 64 * h);
        __m512i c0 = _mm512_and_si512(q, m4), c1 = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (qh) {
            c0 = add_bit(c0, hb, 4 * h, 4 * h + 2, 16);
            c1 = add_bit(c1, hb, 4 * h + 1, 4 * h + 3, 16);
        }
        o->c[2 * h] = c0, o->c[2 * h + 1] = c1;
        o->sc[2 * h] = pick16(sc, 4 * h, 4 * h, 4 * h + 2, 4 * h + 2);
        o->sc[2 * h + 1] = pick16(sc, 4 * h + 1, 4 * h + 1, 4 * h + 3, 4 * h + 3);
    }
    o->md = k4_mins_doubled(scm);
    o->dv = _mm512_set1_ps(_cvtsh_ss(d)), o->ndv = _mm512_set1_ps(-_cvtsh_ss(dmin));
}
/* pre: qs already in the order below (a tile's re-laid rows, q8Kt); else shuffled here */
INLINE __m512 k45_x(const k45w *w, const int8_t *qs, const int16_t *bsums, float dx, int pre, __m512 acc) {
    __m512i sumi = _mm512_setzero_si512();
    UNROLL for (int h = 0; h < 2; h++) {
        __m512i x0, x1;
        if (pre) {
            x0 = ld512(qs + 128 * h), x1 = ld512(qs + 128 * h + 64);
        } else {
            const __m512i xa = ld512(qs + 128 * h), xb = ld512(qs + 128 * h + 64);
            x0 = _mm512_shuffle_i64x2(xa, xb, 0x44), x1 = _mm512_shuffle_i64x2(xa, xb, 0xee);
        }
        sumi = dot_scaled(sumi, w->c[2 * h], x0, w->sc[2 * h]);
        sumi = dot_scaled(sumi, w->c[2 * h + 1], x1, w->sc[2 * h + 1]);
    }
    const __m512 xv = _mm512_set1_ps(dx);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(w->dv, xv), _mm512_cvtepi32_ps(sumi), acc);
    const __m256i mins = _mm256_madd_epi16(w->md, ld256(bsums));
    return _mm512_fmadd_ps(_mm512_mul_ps(w->ndv, xv), _mm512_cvtepi32_ps(_mm512_zextsi256_si512(mins)), acc);
}
typedef k45w wdec_q4_K;
typedef k45w wdec_q5_K;
INLINE void wd_q4_K(k45w *o, const hr_block_q4_K *w) { k45_w(o, w->qs, NULL, w->scales, w->d, w->dmin); }
INLINE void wd_q5_K(k45w *o, const hr_block_q5_K *w) { k45_w(o, w->qs, w->qh, w->scales, w->d, w->dmin); }
INLINE __m512 xd_q4_K(const k45w *w, const hr_block_q8_K *x, __m512 acc) { return k45_x(w, x->qs, x->bsums, x->d, 0, acc); }
INLINE __m512 xd_q5_K(const k45w *w, const hr_block_q8_K *x, __m512 acc) { return k45_x(w, x->qs, x->bsums, x->d, 0, acc); }
INLINE __m512 xt_q4_K(const k45w *w, const q8Kt *x, __m512 acc) { return k45_x(w, x->qs, x->bsums, x->d, 1, acc); }
INLINE __m512 xt_q5_K(const k45w *w, const q8Kt *x, __m512 acc) { return k45_x(w, x->qs, x->bsums, x->d, 1, acc); }

/* ---- Q6_K: per 128 elements, the low nibbles of ql[0..63] are elements 0-63 in order and
 * the high nibbles 64-127; 128-bit lane i of each is one 16-element sub-block ---- */
/* Weight half (codes, scale patterns, scales for the bsums term, d) and activation half, so
 * a tile decodes each super-block once for all its tokens, as for Q4_K. Its activations need
 * no re-layout: the tile's rows (q8Kt) are Q8_K's in order. */
typedef struct { __m512i c[4], s[4]; __m256i sc; float d; } wdec_q6_K;
INLINE void wd_q6_K(wdec_q6_K *o, const hr_block_q6_K *w) {
    const __m256i sc = _mm256_cvtepi8_epi16(ld128(w->scales));
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    /* the 2 high bits of element group k sit at bits 2k of qh: rotate them to bits 4-5 */
    const __m512i rot_lo = _mm512_inserti64x4(_mm512_set1_epi32(4), _mm256_set1_epi32(2), 1);
    const __m512i rot_hi = _mm512_inserti64x4(_mm512_set1_epi32(0), _mm256_set1_epi32(30), 1);
    UNROLL for (int n = 0; n < 2; n++) {
        const __m512i q = ld512(w->ql + 64 * n), hb = _mm512_broadcast_i64x4(ld256(w->qh + 32 * n));
        const __m512i sn = bcast8x16(n ? _mm256_extracti128_si256(sc, 1) : _mm256_castsi256_si128(sc)); /* 8n..8n+7 */
        o->c[2 * n] = _mm512_or_si512(_mm512_and_si512(q, m4), _mm512_and_si512(_mm512_rolv_epi32(hb, rot_lo), m30));
        o->c[2 * n + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q, 4), m4),
                                          _mm512_and_si512(_mm512_rolv_epi32(hb, rot_hi), m30));
        o->s[2 * n] = pick16(sn, 0, 1, 2, 3), o->s[2 * n + 1] = pick16(sn, 4, 5, 6, 7);
    }
    o->sc = sc, o->d = _cvtsh_ss(w->d);
}
INLINE __m512 q6_x(const wdec_q6_K *w, const int8_t *qs, const int16_t *bsums, float dx, __m512 acc) {
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(w->sc, ld256(bsums)), 5);
    __m512i sumi = _mm512_setzero_si512();
    UNROLL for (int n = 0; n < 2; n++) {
        sumi = dot_scaled(sumi, w->c[2 * n], ld512(qs + 128 * n), w->s[2 * n]);
        sumi = dot_scaled(sumi, w->c[2 * n + 1], ld512(qs + 128 * n + 64), w->s[2 * n + 1]);
    }
    return fma_int(acc, dx * w->d, _mm512_sub_epi32(sumi, _mm512_zextsi256_si512(off)));
}
INLINE __m512 xd_q6_K(const wdec_q6_K *w, const hr_block_q8_K *x, __m512 acc) { return q6_x(w, x->qs, x->bsums, x->d, acc); }
INLINE __m512 xt_q6_K(const wdec_q6_K *w, const q8Kt *x, __m512 acc) { return q6_x(w, x->qs, x->bsums, x->d, acc); }
INLINE __m512 sb_q6_K(const hr_block_q6_K *w, const hr_block_q8_K *x, __m512 acc) {
    wdec_q6_K d;
    wd_q6_K(&d, w);
    return xd_q6_K(&d, x, acc);
}

/* ---- IQ4_XS: register p holds sub-blocks 4p..4p+3, one per 128-bit lane; weight half
 * (levels, scales) and activation half as for Q4_K ---- */
typedef struct { __m512i v[4], sc[2]; __m256i lsd; __m512 dv; } wdec_iq4_xs; /* dv: d in every lane */
INLINE void wd_iq4_xs(wdec_iq4_xs *o, const hr_block_iq4_xs *w) {
    /* levels + 128: unsigned for vpdpbusd */
    const __m512i lv = _mm512_broadcast_i32x4(_mm_add_epi8(ld128(hr_kvalues_iq4nl), _mm_set1_epi8((char)0x80)));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m256i ls = iq4xs_scales32(w);
    const __m256i ls16 = _mm256_packs_epi32(ls, ls); /* per half: ls0-3 ls0-3 | ls4-7 ls4-7 */
    o->lsd = _mm256_unpacklo_epi16(ls16, ls16);      /* ls0 ls0 ls1 ls1 ... ls7 ls7 */
    UNROLL for (int p = 0; p < 2; p++) {
        const __m512i q = ld512(w->qs + 64 * p);
        o->v[2 * p] = _mm512_shuffle_epi8(lv, _mm512_and_si512(q, m4));
        o->v[2 * p + 1] = _mm512_shuffle_epi8(lv, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
        o->sc[p] = _mm512_permutexvar_epi32(
            _mm512_setr_epi32(4 * p, 4 * p, 4 * p, 4 * p, 4 * p + 1, 4 * p + 1, 4 * p + 1, 4 * p + 1, 4 * p + 2, 4 * p + 2,
                              4 * p + 2, 4 * p + 2, 4 * p + 3, 4 * p + 3, 4 * p + 3, 4 * p + 3),
            _mm512_zextsi256_si512(ls));
    }
    o->dv = _mm512_set1_ps(_cvtsh_ss(w->d));
}
INLINE __m512 iq4_x(const wdec_iq4_xs *w, const int8_t *qs, const int16_t *bsums, float dx, int pre, __m512 acc) {
    /* 128 * sum over each sub-block of ls * x, from the bsums (two per sub-block) */
    const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(w->lsd, ld256(bsums)), 7);
    __m512i sumi = _mm512_setzero_si512();
    UNROLL for (int p = 0; p < 2; p++) {
        __m512i xl, xh;
        if (pre) {
            xl = ld512(qs + 128 * p), xh = ld512(qs + 128 * p + 64);
        } else {
            const __m512i xa = ld512(qs + 128 * p), xb = ld512(qs + 128 * p + 64);
            xl = _mm512_shuffle_i64x2(xa, xb, 0x88), xh = _mm512_shuffle_i64x2(xa, xb, 0xdd);
        }
        const __m512i s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w->v[2 * p], xl), w->v[2 * p + 1], xh);
        sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(s, w->sc[p]));
    }
    return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dx), w->dv), _mm512_cvtepi32_ps(_mm512_sub_epi32(sumi, _mm512_zextsi256_si512(off))), acc);
}
INLINE __m512 xd_iq4_xs(const wdec_iq4_xs *w, const hr_block_q8_K *x, __m512 acc) { return iq4_x(w, x->qs, x->bsums, x->d, 0, acc); }
INLINE __m512 xt_iq4_xs(const wdec_iq4_xs *w, const q8Kt *x, __m512 acc) { return iq4_x(w, x->qs, x->bsums, x->d, 1, acc); }
INLINE __m512 sb_iq4_xs(const hr_block_iq4_xs *w, const hr_block_q8_K *x, __m512 acc) {
    wdec_iq4_xs d;
    wd_iq4_xs(&d, w);
    return xd_iq4_xs(&d, x, acc);
}

/* ---- drivers, as in AVX2 ---- */
#define PF_AHEAD 1536
/* rows4 fetches into L2 the bytes it reads of the row PF4_ROWS on (two calls ahead), as
 * Q4_0's and Q8_0's rows4 do: one call ahead into L1 (4 rows on) left IQ4_XS's rows4 at
 * 10.5 GB/s from DRAM on Zen 4 against vec_dot's 15.9 (docs/performance.md) */
#define PF4_ROWS 8
INLINE void pf_block_l2(const char *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
    _mm_prefetch(p + bytes - 1, _MM_HINT_T1);
}
INLINE void pf_block(const char *p, size_t bytes, size_t ahead) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(p + ahead + o, _MM_HINT_T0);
    _mm_prefetch(p + ahead + bytes - 1, _MM_HINT_T0);
}

/* One row's dot of n weights at W against x, super-block by super-block through SB (sb_T over
 * Q8_K blocks; sbt_T over the re-laid q8Kt), PFB(i) the prefetch while super-block i is read;
 * the result into OUT. */
#define KQ_PLAIN_ROW_OF(T, BLK, PFB, OUT, XBLK, SB)                                                        \
        const XBLK *X = x;                                                                                 \
        __m512 acc = _mm512_setzero_ps();                                                                  \
        for (int64_t i = 0; i < n / HR_QK_K; i++) {                                                        \
            PFB(i);                                                                                        \
            acc = SB(&W[i], &X[i], acc);                                                                   \
        }                                                                                                  \
        OUT = _mm512_reduce_add_ps(acc);
#define KQ_PLAIN_ROW(T, BLK, PFB, OUT) KQ_PLAIN_ROW_OF(T, BLK, PFB, OUT, hr_block_q8_K, sb_##T)
#define KQ_DOT(T, BLK)                                                                                   \
    TGT void hr_dot_##T##_avx512(int64_t n, float *s, const void *w, const void *x) {                      \
        const BLK *W = w;                                                                                  \
        KQ_PLAIN_ROW(T, BLK, PFB_AHEAD, *s)                                                                \
    }

#define KQ_ROWS4(T, BLK) KQ_ROWS4_OF(hr_rows4_##T##_avx512, BLK, hr_block_q8_K, sb_##T)
/* NAME: 4 rows side by side, XBLK the activation blocks, SB the super-block step */
#define KQ_ROWS4_OF(NAME, BLK, XBLK, SB)                                                                   \
    TGT void NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {    \
        const char *W = w;                                                                                 \
        const XBLK *X = x;                                                                                 \
        __m512 acc[4];                                                                                     \
        (void)xs;                                                                                          \
        (void)ys;                                                                                          \
        UNROLL for (int r = 0; r < 4; r++) acc[r] = _mm512_setzero_ps();                                   \
        for (int64_t i = 0; i < n / HR_QK_K; i++)                                                          \
            UNROLL for (int r = 0; r < 4; r++) {                                                           \
                const BLK *b = (const BLK *)(W + r * ws) + i;                                              \
                pf_block_l2((const char *)b + PF4_ROWS * ws, sizeof(BLK));                                 \
                acc[r] = SB(b, &X[i], acc[r]);                                                             \
            }                                                                                              \
        UNROLL for (int r = 0; r < 4; r++) y[r] = _mm512_reduce_add_ps(acc[r]);                            \
    }
#define KQ_FUNCS(T, BLK) KQ_DOT(T, BLK) KQ_ROWS4(T, BLK)

/* Decode vec_dot of Q4_K/Q5_K: the tiles' operations per super-block (k45_w, then k45_x) in their
 * order, with the
 * unpacking of the packed 6-bit scales and mins done for 4 consecutive super-blocks at once
 * (their 12-byte fields go through k4_scales_mins' steps side by side, one per 128-bit lane).
 * Each super-block's int16 scale patterns are then picked from those bytes with a shuffle that
 * also widens them (index bytes with the top bit set write zeros): the values k45_w's widen
 * and pick give, so every integer lane and float operation, and the result, is theirs bit for
 * bit. Per super-block alone that unpacking and picking was about a third of the instructions. */
INLINE __m512i bc128(char a0, char a1, char a2, char a3, char a4, char a5, char a6, char a7, char a8, char a9,
                     char a10, char a11, char a12, char a13, char a14, char a15) {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15));
}
/* byte j of 128-bit lane r: the j-th of block r's 8 scale then 8 min bytes (6 bits each) */
INLINE __m512i k4_scales_mins_x4(const uint8_t *s0, const uint8_t *s1, const uint8_t *s2, const uint8_t *s3) {
    __m512i v = _mm512_castsi128_si512(ld128(s0));
    v = _mm512_inserti32x4(v, ld128(s1), 1);
    v = _mm512_inserti32x4(v, ld128(s2), 2);
    v = _mm512_inserti32x4(v, ld128(s3), 3);
    const __m512i a = _mm512_shuffle_epi8(v, bc128(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m512i b = _mm512_shuffle_epi8(v, bc128(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m512i lo = _mm512_and_si512(_mm512_srlv_epi32(a, _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0, 0, 4))),
                                        _mm512_broadcast_i32x4(_mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f)));
    const __m512i hi = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(b, 6), _mm512_set1_epi8(3)), 4);
    return _mm512_or_si512(lo, hi);
}
/* int16 lanes of 128-bit lane j: byte a_j of b, zero-extended (b: one block's bytes in every lane) */
INLINE int zx16(int a) { return a | 0x8000 | a << 16 | (int)0x80000000u; }
INLINE __m512i widen_pick(__m512i b, int a0, int a1, int a2, int a3) {
    return _mm512_shuffle_epi8(b, _mm512_setr_epi32(zx16(a0), zx16(a0), zx16(a0), zx16(a0), zx16(a1), zx16(a1), zx16(a1),
                                                    zx16(a1), zx16(a2), zx16(a2), zx16(a2), zx16(a2), zx16(a3), zx16(a3),
                                                    zx16(a3), zx16(a3)));
}
/* 128-bit lane r of v in all four lanes. The shuffle takes an immediate: a switch, so that an
 * unoptimised build (where r is not folded to a constant) compiles too. */
INLINE __m512i lane_bcast(__m512i v, int r) {
    switch (r) {
    case 0: return _mm512_shuffle_i32x4(v, v, 0x00);
    case 1: return _mm512_shuffle_i32x4(v, v, 0x55);
    case 2: return _mm512_shuffle_i32x4(v, v, 0xaa);
    default: return _mm512_shuffle_i32x4(v, v, 0xff);
    }
}
/* one super-block, its scales in lane r of dec4, against x[0..3] (k45_x's x0, x1 of h = 0, 1) */
INLINE __m512 k45_row(const uint8_t *qs, const uint8_t *qh, __m512i dec4, int r, uint16_t d, uint16_t dmin,
                      const __m512i x[4], __m256i bsums, float dx, __m512 acc) {
    const __m512i b = lane_bcast(dec4, r);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i hb = qh ? _mm512_broadcast_i64x4(ld256(qh)) : _mm512_setzero_si512();
    __m512i sumi = _mm512_setzero_si512();
    UNROLL for (int h = 0; h < 2; h++) {
        const __m512i q = ld512(qs + 64 * h);
        __m512i c0 = _mm512_and_si512(q, m4), c1 = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (qh) {
            c0 = add_bit(c0, hb, 4 * h, 4 * h + 2, 16);
            c1 = add_bit(c1, hb, 4 * h + 1, 4 * h + 3, 16);
        }
        sumi = dot_scaled(sumi, c0, x[2 * h], widen_pick(b, 4 * h, 4 * h, 4 * h + 2, 4 * h + 2));
        sumi = dot_scaled(sumi, c1, x[2 * h + 1], widen_pick(b, 4 * h + 1, 4 * h + 1, 4 * h + 3, 4 * h + 3));
    }
    /* the mins doubled per pair of bsums (k4_mins' layout): bytes 8-15 widened */
    const __m256i md = _mm256_shuffle_epi8(_mm512_castsi512_si256(b),
        _mm256_setr_epi32(zx16(8), zx16(9), zx16(10), zx16(11), zx16(12), zx16(13), zx16(14), zx16(15)));
    const __m512 xv = _mm512_set1_ps(dx);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(d)), xv), _mm512_cvtepi32_ps(sumi), acc);
    const __m256i mins = _mm256_madd_epi16(md, bsums);
    return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(-_cvtsh_ss(dmin)), xv),
                           _mm512_cvtepi32_ps(_mm512_zextsi256_si512(mins)), acc);
}
#define QH_q4_K(b) NULL
#define QH_q5_K(b) (b)->qh

/* the activation registers k45_row takes, from a Q8_K block */
INLINE void k45_xside(const hr_block_q8_K *x, __m512i xs4[4]) {
    UNROLL for (int h = 0; h < 2; h++) {
        const __m512i xa = ld512(x->qs + 128 * h), xb = ld512(x->qs + 128 * h + 64);
        xs4[2 * h] = _mm512_shuffle_i64x2(xa, xb, 0x44);
        xs4[2 * h + 1] = _mm512_shuffle_i64x2(xa, xb, 0xee);
    }
}
/* PFB(i): the prefetch while super-block i is read (vec_dot: PF_AHEAD on in the row, into L1;
 * gather4: the same bytes of the nx row P, into L2) */
#define PFB_AHEAD(i) pf_block((const char *)&W[i], sizeof(W[0]), PF_AHEAD)
#define PFB_NEXT(i) pf_block_l2(P + (i) * sizeof(W[0]), sizeof(W[0]))
/* gather4 also fetches its own row's super-block KQ_GATHER_L1 on into L1 (from L2, where the
 * nx prefetch of earlier calls put it), never past the row's end. Q4_K/Q6_K at 10-30% of
 * 11008 rows of 4096, one Zen 4 thread: 48-65% -> 56-75% and 63-90% -> 66-94% of the dense
 * kernel's GB/s (bench/sparse.c, docs/performance.md). */
#define KQ_GATHER_L1 2
#define PFB_GATHER(i)                                                                              \
    do {                                                                                           \
        PFB_NEXT(i);                                                                               \
        if ((i) + KQ_GATHER_L1 < nb) pf_block((const char *)&W[(i) + KQ_GATHER_L1], sizeof(W[0]), 0);    \
    } while (0)
#define KQ_DOT_K45(T, BLK)                                                                                 \
    TGT void hr_dot_##T##_avx512(int64_t n, float *s, const void *w, const void *x) {                      \
        const BLK *W = w;                                                                                  \
        KQ_K45_ROW(T, BLK, PFB_AHEAD, *s)                                                                  \
    }
#define KQ_K45_ROW(T, BLK, PFB, OUT) KQ_K45_ROW_OF(T, BLK, PFB, OUT, hr_block_q8_K, k45_xside)
/* XBLK: the activation row's blocks (hr_block_q8_K, or re-laid q8Kt), XSIDE its registers for
 * k45_row. A last group of 1-3 super-blocks goes through k45_row too, its scales unpacked with
 * the last block's repeated in the unused lanes: rows of 768 or 1536 inputs (MoE experts' down
 * rows, predictors) had 3 or 2 of their 3 or 6 super-blocks unpacked one at a time (in cache 5-12%
 * slower per row at 768 inputs, 4% at 1536). */
#define K45_STEP(T, BLK, PFB, XSIDE, i, j, dec)                                                            \
    {                                                                                                      \
        const BLK *b = &W[(i) + (j)];                                                                      \
        PFB((i) + (j));                                                                                    \
        __m512i xs4[4];                                                                                    \
        XSIDE(&X[(i) + (j)], xs4);                                                                         \
        acc = k45_row(b->qs, QH_##T(b), dec, j, b->d, b->dmin, xs4, ld256(X[(i) + (j)].bsums), X[(i) + (j)].d, acc); \
    }
#define KQ_K45_ROW_OF(T, BLK, PFB, OUT, XBLK, XSIDE)                                                       \
        const XBLK *X = x;                                                                                 \
        const int64_t nb = n / HR_QK_K;                                                                    \
        __m512 acc = _mm512_setzero_ps();                                                                  \
        int64_t i = 0;                                                                                     \
        for (; i + 4 <= nb; i += 4) {                                                                      \
            const __m512i dec = k4_scales_mins_x4(W[i].scales, W[i + 1].scales, W[i + 2].scales,           \
                                                  W[i + 3].scales);                                        \
            UNROLL for (int j = 0; j < 4; j++) K45_STEP(T, BLK, PFB, XSIDE, i, j, dec)                     \
        }                                                                                                  \
        if (i < nb) {                                                                                      \
            const int64_t m = nb - i;                                                                      \
            const __m512i dec = k4_scales_mins_x4(W[i].scales, W[i + (m > 1)].scales,                      \
                                                  W[m > 2 ? i + 2 : i + m - 1].scales, W[i + m - 1].scales); \
            UNROLL for (int j = 0; j < 3; j++) if (j < m) K45_STEP(T, BLK, PFB, XSIDE, i, j, dec)          \
        }                                                                                                  \
        OUT = _mm512_reduce_add_ps(acc);
/* rows4 as 4 vec_dots, one row after the other. Read side by side (4 streams, each one row
 * long), the rows came from DRAM 10-35% slower at 1 thread than one row at a time (bench_kernels
 * kq, Q4_K, Q5_K, Q6_K), while sharing the activation-side shuffles across the rows gained less
 * (5-15%, in L2). Decode reads weights from DRAM. Each row also fetches into L2 the bytes it
 * reads of the row PF4_ROWS on (two calls ahead), as AVX2's do: on Zen 4 from DRAM, Q6_K
 * 15-16 -> 21-24 GB/s, Q5_K +4-21%, Q4_K +2-7% (compute-bound there). Same per-block steps as
 * vec_dot, so the same bits. Q4_K/Q5_K side by side with the shared activation side and this
 * prefetch (with and without vec_dot's too), tried again on Zen 4: 21-25 GB/s in L2 against
 * 18-21, but 11-15 from DRAM against 16-18. */
#define PFB_ROWS4(i)                                                                               \
    do {                                                                                           \
        PFB_AHEAD(i);                                                                              \
        pf_block_l2(P + (i) * sizeof(W[0]), sizeof(W[0]));                                         \
    } while (0)
/* ROW: KQ_K45_ROW or KQ_PLAIN_ROW, vec_dot's own steps (KQ_K45_ROW_X: over re-laid rows) */
#define KQ_ROWS4_SEQ(T, BLK, ROW) KQ_ROWS4_SEQ_N(hr_rows4_##T##_avx512, T, BLK, ROW)
#define KQ_ROWS4_SEQ_N(NAME, T, BLK, ROW)                                                                  \
    TGT void NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {    \
        (void)xs;                                                                                          \
        (void)ys;                                                                                          \
        for (int r = 0; r < 4; r++) {                                                                      \
            const BLK *W = (const BLK *)((const char *)w + r * ws);                                        \
            const char *P = (const char *)w + (r + PF4_ROWS) * ws;                                         \
            ROW(T, BLK, PFB_ROWS4, y[r])                                                                   \
        }                                                                                                  \
    }

/* rows4_x: rows4 over the activation row re-laid for tile_x (q8Kt, ORD_K45), so that each
 * row's super-blocks load k45_row's x registers instead of shuffling them again: 4 shuffles of
 * about 45 instructions per super-block, in a kernel that is compute-bound on Zen 4 at one
 * thread. The same integer and float steps, so rows4's bits. */
INLINE void k45_xside_t(const q8Kt *x, __m512i xs4[4]) {
    UNROLL for (int k = 0; k < 4; k++) xs4[k] = ld512(x->qs + 64 * k);
}
#define KQ_SBT(T, BLK)                                                                                     \
    INLINE __m512 sbt_##T(const BLK *w, const q8Kt *x, __m512 acc) {                                       \
        wdec_##T d;                                                                                        \
        wd_##T(&d, w);                                                                                     \
        return xt_##T(&d, x, acc);                                                                         \
    }
#define KQ_K45_ROW_X(T, BLK, PFB, OUT) KQ_K45_ROW_OF(T, BLK, PFB, OUT, q8Kt, k45_xside_t)
#define KQ_ROWS4_X(T, BLK) KQ_ROWS4_SEQ_N(hr_rows4_x_##T##_avx512, T, BLK, KQ_K45_ROW_X)

#define KQ_TILE(T, BLK)                                                                                    \
    TGT void hr_tile_##T##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs,           \
                                  float *y, size_t ys) {                                                   \
        const char *W = w, *X = x;                                                                         \
        __m512 acc[HR_TILE_R][HR_TILE_C];                                                                  \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                         \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) acc[r][c] = _mm512_setzero_ps();                    \
        for (int64_t i = 0; i < n / HR_QK_K; i++)                                                          \
            UNROLL for (int r = 0; r < HR_TILE_R; r++) {                                                   \
                const BLK *b = (const BLK *)(W + r * ws) + i;                                              \
                pf_block((const char *)b, sizeof(BLK), PF_AHEAD);                                          \
                UNROLL for (int c = 0; c < HR_TILE_C; c++)                                                 \
                    acc[r][c] = sb_##T(b, (const hr_block_q8_K *)(X + c * xs) + i, acc[r][c]);             \
            }                                                                                              \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                         \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]);    \
    }

/* Types split in a weight half and an activation half: each weight super-block is decoded
 * once per row and applied to the tile's tokens (the same operations per pair as sb_T). */
#define KQ_TILE_DEC(T, BLK)                                                                                \
    TGT void hr_tile_##T##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs,           \
                                  float *y, size_t ys) {                                                   \
        const char *W = w, *X = x;                                                                         \
        __m512 acc[HR_TILE_R][HR_TILE_C];                                                                  \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                         \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) acc[r][c] = _mm512_setzero_ps();                    \
        for (int64_t i = 0; i < n / HR_QK_K; i++)                                                          \
            UNROLL for (int r = 0; r < HR_TILE_R; r++) {                                                   \
                const BLK *b = (const BLK *)(W + r * ws) + i;                                              \
                pf_block((const char *)b, sizeof(BLK), PF_AHEAD);                                          \
                wdec_##T wd;                                                                               \
                wd_##T(&wd, b);                                                                            \
                UNROLL for (int c = 0; c < HR_TILE_C; c++)                                                 \
                    acc[r][c] = xd_##T(&wd, (const hr_block_q8_K *)(X + c * xs) + i, acc[r][c]);           \
            }                                                                                              \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                         \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]);    \
    }

/* The same over re-laid activation rows (q8Kt), and the re-layout: 16-byte piece k of each
 * 128-byte half goes to slot k of ord (the shuffles xd_T would do). */
#define KQ_TILE_X_RC(NAME, T, BLK, R, C)                                                                   \
    TGT void NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {    \
        const char *W = w, *X = x;                                                                         \
        __m512 acc[R][C];                                                                                  \
        UNROLL for (int r = 0; r < R; r++)                                                                 \
            UNROLL for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();                            \
        for (int64_t i = 0; i < n / HR_QK_K; i++)                                                          \
            UNROLL for (int r = 0; r < R; r++) {                                                           \
                const BLK *b = (const BLK *)(W + r * ws) + i;                                              \
                pf_block((const char *)b, sizeof(BLK), PF_AHEAD);                                          \
                wdec_##T wd;                                                                               \
                wd_##T(&wd, b);                                                                            \
                UNROLL for (int c = 0; c < C; c++)                                                         \
                    acc[r][c] = xt_##T(&wd, (const q8Kt *)(X + c * xs) + i, acc[r][c]);                    \
            }                                                                                              \
        UNROLL for (int r = 0; r < R; r++)                                                                 \
            UNROLL for (int c = 0; c < C; c++) y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]);            \
    }
/* tile_x, its 2 x 8 form (each weight super-block decoded once for 8 tokens: Q4_K 60 -> 69,
 * Q5_K 53 -> 65, IQ4_XS 62 -> 74 GMAC/s at 4096 inputs, one thread) and the re-layout */
#define KQ_TILE_X(T, BLK, ORD)                                                                             \
    KQ_TILE_X_RC(hr_tile_x_##T##_avx512, T, BLK, HR_TILE_R, HR_TILE_C)                                     \
    KQ_TILE_X_RC(hr_tile_xw_##T##_avx512, T, BLK, 2, 8)                                                    \
    void hr_tile_xprep_##T##_avx512(const void *xq, void *xt, int64_t n) {                                      \
        static const int ord[8] = ORD;                                                                     \
        const hr_block_q8_K *s = xq;                                                                       \
        q8Kt *o = xt;                                                                                      \
        for (int64_t i = 0; i < n / HR_QK_K; i++) {                                                        \
            for (int h = 0; h < 2; h++)                                                                    \
                for (int k = 0; k < 8; k++) memcpy(o[i].qs + 128 * h + 16 * k, s[i].qs + 128 * h + 16 * ord[k], 16); \
            memcpy(o[i].bsums, s[i].bsums, sizeof o[i].bsums);                                             \
            o[i].d = s[i].d;                                                                               \
            memset(o[i].pad, 0, sizeof o[i].pad);                                                          \
        }                                                                                                  \
    }
size_t hr_tile_xbytes_q8Kt_avx512(int64_t n) { return (size_t)(n / HR_QK_K) * sizeof(q8Kt); }
/* Q4_K/Q5_K registers hold pieces 0,1 of both 64-byte halves, then 2,3; IQ4_XS 0,2 then 1,3 */
#define ORD_K45 {0, 1, 4, 5, 2, 3, 6, 7}
#define ORD_IQ4 {0, 2, 4, 6, 1, 3, 5, 7}
#define ORD_ID {0, 1, 2, 3, 4, 5, 6, 7} /* Q6_K: Q8_K's order */

/* gather4 (scattered rows, kernels_impl.h): vec_dot per row, the rows one after the other,
 * prefetching into L2 the bytes of the nx row at the offsets it reads, and into L1 its own
 * row KQ_GATHER_L1 super-blocks on (PFB_GATHER; not past the row's end, where an inactive
 * row may follow). */
#define KQ_GATHER4_LOOP(BLK, ROW)                                                                          \
    for (int r = 0; r < 4; r++) {                                                                          \
        const BLK *W = wr[r];                                                                              \
        const char *P = nx[r];                                                                             \
        ROW                                                                                                \
    }
#define KQ_GATHER4(T, BLK)                                                                                 \
    TGT void hr_gather4_##T##_avx512(int64_t n, const void *const *wr, const void *const *nx,             \
                                     const void *x, float *y) {                                            \
        const hr_block_q8_K *X = x;                                                                        \
        KQ_GATHER4_LOOP(BLK, {                                                                             \
            __m512 acc = _mm512_setzero_ps();                                                              \
            const int64_t nb = n / HR_QK_K;                                                                \
            for (int64_t i = 0; i < nb; i++) {                                                             \
                PFB_GATHER(i);                                                                             \
                acc = sb_##T(&W[i], &X[i], acc);                                                           \
            }                                                                                              \
            y[r] = _mm512_reduce_add_ps(acc);                                                              \
        })                                                                                                 \
    }
#define KQ_GATHER4_K45(T, BLK)                                                                             \
    TGT void hr_gather4_##T##_avx512(int64_t n, const void *const *wr, const void *const *nx,             \
                                     const void *x, float *y) {                                            \
        KQ_GATHER4_LOOP(BLK, { KQ_K45_ROW(T, BLK, PFB_GATHER, y[r]) })                                      \
    }

KQ_FUNCS(q2_K, hr_block_q2_K)
KQ_TILE(q2_K, hr_block_q2_K)
KQ_FUNCS(q3_K, hr_block_q3_K)
KQ_TILE(q3_K, hr_block_q3_K)
KQ_DOT_K45(q4_K, hr_block_q4_K)
KQ_ROWS4_SEQ(q4_K, hr_block_q4_K, KQ_K45_ROW)
KQ_TILE_DEC(q4_K, hr_block_q4_K)
KQ_TILE_X(q4_K, hr_block_q4_K, ORD_K45)
KQ_ROWS4_X(q4_K, hr_block_q4_K)
KQ_DOT_K45(q5_K, hr_block_q5_K)
KQ_ROWS4_SEQ(q5_K, hr_block_q5_K, KQ_K45_ROW)
KQ_TILE_DEC(q5_K, hr_block_q5_K)
KQ_TILE_X(q5_K, hr_block_q5_K, ORD_K45)
KQ_ROWS4_X(q5_K, hr_block_q5_K)
KQ_DOT(q6_K, hr_block_q6_K)
KQ_ROWS4_SEQ(q6_K, hr_block_q6_K, KQ_PLAIN_ROW)
KQ_TILE_DEC(q6_K, hr_block_q6_K)
KQ_TILE_X(q6_K, hr_block_q6_K, ORD_ID)
KQ_FUNCS(iq4_xs, hr_block_iq4_xs)
KQ_TILE_DEC(iq4_xs, hr_block_iq4_xs)
KQ_TILE_X(iq4_xs, hr_block_iq4_xs, ORD_IQ4)
KQ_SBT(iq4_xs, hr_block_iq4_xs)
/* IQ4_XS's rows4_x: one row after the other over the re-laid row, as Q4_K's and Q5_K's; side by
 * side (KQ_ROWS4_OF) it read 10-13% slower from DRAM on Zen 5 (bench harness, 4 alternating
 * pairs; in cache level). */
#define KQ_PLAIN_ROW_X(T, BLK, PFB, OUT) KQ_PLAIN_ROW_OF(T, BLK, PFB, OUT, q8Kt, sbt_##T)
KQ_ROWS4_SEQ_N(hr_rows4_x_iq4_xs_avx512, iq4_xs, hr_block_iq4_xs, KQ_PLAIN_ROW_X)
KQ_GATHER4(q2_K, hr_block_q2_K)
KQ_GATHER4(q3_K, hr_block_q3_K)
KQ_GATHER4_K45(q4_K, hr_block_q4_K)
KQ_GATHER4_K45(q5_K, hr_block_q5_K)
KQ_GATHER4(q6_K, hr_block_q6_K)
KQ_GATHER4(iq4_xs, hr_block_iq4_xs)

#endif
