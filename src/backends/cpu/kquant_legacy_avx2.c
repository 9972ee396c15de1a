/* AVX2 + FMA + F16C kernels of the 32-element weight types beyond Q8_0/Q4_0: Q4_1 and
 * Q5_1 (against Q8_1), Q5_0, IQ4_NL and MXFP4 (against Q8_0), and the Q8_1 activation
 * prep. Built like Q4_0's in kernels_avx2.c: groups of 8 blocks; a register holds the
 * packed bytes of a block pair (lane k: block 2p+k), its low nibbles meeting elements 0-15
 * of the activation blocks and its high nibbles elements 16-31, an x-side arrangement done
 * once per group and shared by every weight row of a call. Q4_1, Q5_1, Q5_0 (c = 16) and
 * MXFP4 (table values + c, c = 12) become unsigned bytes u = w + c and the x side carries
 * c * sum(x) per int32 lane; IQ4_NL's values do not fit that (maddubs would saturate), so
 * its sign moves onto x per row. All integer dots are exact (int16 sums stay below 2^15).
 * Scales of 8 blocks convert at once; each pair's lanes take theirs with one permute into
 * one of two accumulators; Q4_1/Q5_1's m * s go to a third. The sequence of operations per
 * (row, token) does not depend on how many rows or tokens a call handles, so vec_dot,
 * rows2, rows4 and tiles agree bit for bit. A ragged tail (n/32 not a multiple of 8) runs
 * the same group code on zero-padded copies (zero blocks add exactly +0). */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <string.h>

#include "kquant_legacy_simd.h"

#define INLINE static inline __attribute__((always_inline))

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
INLINE int hsum8i(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Same as hr_prep_q8_0_avx2 (ggml's x86 quantize_row_q8_1), plus s = F16(d * sum(q)) with
 * d the float amax/127 before its F16 rounding. */
#define RM_EVEN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) /* an immediate, also at -O0 */
void hr_prep_q8_1_avx2(const float *x, void *xq, int64_t n) {
    hr_block_q8_1 *y = xq;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / HR_QK; b++, x += HR_QK) {
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4), d = amax / 127.f;
        const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
        __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), RM_EVEN));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), RM_EVEN));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), RM_EVEN));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), RM_EVEN));
        const int sum = hsum8i(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
        y[b].d = hr_f32_to_f16(d);
        y[b].s = hr_f32_to_f16(d * (float)sum);
        i0 = _mm256_packs_epi32(i0, i1);
        i2 = _mm256_packs_epi32(i2, i3);
        i0 = _mm256_packs_epi16(i0, i2);
        i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)y[b].qs, i0);
    }
}

enum { T_Q4_1, T_Q5_1, T_Q5_0, T_IQ4_NL, T_MXFP4 };
#define QGRP 8
#define PF_AHEAD 1536

/* layout per type: block bytes, offset of qs, of qh (Q5), whether it has a min, the shift c */
INLINE int bsz(int T) { return T == T_Q4_1 ? 20 : T == T_Q5_1 ? 24 : T == T_Q5_0 ? 22 : T == T_IQ4_NL ? 18 : 17; }
INLINE int qoff(int T) { return T == T_Q4_1 ? 4 : T == T_Q5_1 ? 8 : T == T_Q5_0 ? 6 : T == T_IQ4_NL ? 2 : 1; }
INLINE int qhoff(int T) { return T == T_Q5_1 ? 4 : 2; }
INLINE int hasmin(int T) { return T == T_Q4_1 || T == T_Q5_1; }
INLINE int is5(int T) { return T == T_Q5_1 || T == T_Q5_0; }
INLINE int shiftc(int T) { return T == T_Q5_0 ? 16 : T == T_MXFP4 ? 12 : 0; }

/* the 8 F16 fields at p, p + stride, ... as floats */
INLINE __m256 scales8(const char *p, int stride) {
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}
INLINE __m256i two128(const void *a, const void *b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                   _mm_loadu_si128((const __m128i *)b), 1);
}
INLINE __m256i sidx(int p) { /* int32 lanes 0-3: block 2p, 4-7: block 2p+1 */
    return _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1);
}

/* ---- x side of pair p of a group: q[0] = elements 0-15 of blocks 2p, 2p+1, q[1] = 16-31;
 * cs = c * sum(x) per int32 lane ---- */
typedef struct { __m256i q[2], cs; } xpair;
INLINE void x_pair(int T, xpair *g, const char *x, int p) {
    const int xb = hasmin(T) ? (int)sizeof(hr_block_q8_1) : (int)sizeof(hr_block_q8_0), xq = hasmin(T) ? 4 : 2;
    const char *B = x + 2 * p * xb + xq;
    g->q[0] = two128(B, B + xb);
    g->q[1] = two128(B + 16, B + xb + 16);
    g->cs = _mm256_setzero_si256();
    if (shiftc(T)) {
        const __m256i c = _mm256_set1_epi8((char)shiftc(T));
        __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(c, g->q[0]), _mm256_maddubs_epi16(c, g->q[1]));
        g->cs = _mm256_madd_epi16(s, _mm256_set1_epi16(1));
    }
}

INLINE __m256 e8m0_half8(const char *w) { /* 2^(e-128) of 8 blocks' e, as hr_e8m0_to_f32_half */
    uint8_t eb[8];
    for (int k = 0; k < 8; k++) eb[k] = (uint8_t)w[17 * k];
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)eb));
    const __m256i big = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i lt2 = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(big, small, lt2));
}
/* 0x10 in byte j of lane k where bit j (lo) or 16 + j (hi) of block 2p+k's qh is set */
INLINE void bit5_pair(int T, const char *w, __m256i *lo, __m256i *hi) {
    uint32_t a, b;
    memcpy(&a, w + qhoff(T), 4);
    memcpy(&b, w + bsz(T) + qhoff(T), 4);
    const __m256i v = _mm256_set1_epi64x((long long)((uint64_t)b << 32 | a));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull), b4 = _mm256_set1_epi8(0x10);
    const __m256i sl = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0404040404040404, 0x0505050505050505);
    const __m256i sh = _mm256_setr_epi64x(0x0202020202020202, 0x0303030303030303, 0x0606060606060606, 0x0707070707070707);
    *lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, sl), bit), bit), b4);
    *hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, sh), bit), bit), b4);
}

/* ---- weight side: pair p of a row's group as values in the x side's lane order (lo:
 * elements 0-15 of blocks 2p, 2p+1, hi: 16-31), unsigned (w + c) except IQ4_NL's (signed) */
INLINE void w_pair(int T, const char *w, int p, __m256i *lo, __m256i *hi) {
    const int BS = bsz(T);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const char *B = w + 2 * p * BS;
    const __m256i v = two128(B + qoff(T), B + BS + qoff(T));
    __m256i l = _mm256_and_si256(v, m4), h = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (is5(T)) {
        __m256i bl, bh;
        bit5_pair(T, B, &bl, &bh);
        l = _mm256_or_si256(l, bl), h = _mm256_or_si256(h, bh);
    } else if (T == T_IQ4_NL || T == T_MXFP4) {
        __m256i lut = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(T == T_IQ4_NL ? hr_kvalues_iq4nl : hr_kvalues_mxfp4)));
        if (T == T_MXFP4) lut = _mm256_add_epi8(lut, _mm256_set1_epi8((char)shiftc(T)));
        l = _mm256_shuffle_epi8(lut, l), h = _mm256_shuffle_epi8(lut, h);
    }
    *lo = l, *hi = h;
}
INLINE __m256 w_d8(int T, const char *w) { return T == T_MXFP4 ? e8m0_half8(w) : scales8(w, bsz(T)); }

/* exact int32 lanes of one pair's dot */
INLINE __m256i pair_dot(int T, __m256i lo, __m256i hi, const xpair *x) {
    const __m256i ones = _mm256_set1_epi16(1);
    if (T == T_IQ4_NL) {
        const __m256i a = _mm256_maddubs_epi16(_mm256_sign_epi8(lo, lo), _mm256_sign_epi8(x->q[0], lo));
        const __m256i b = _mm256_maddubs_epi16(_mm256_sign_epi8(hi, hi), _mm256_sign_epi8(x->q[1], hi));
        return _mm256_add_epi32(_mm256_madd_epi16(a, ones), _mm256_madd_epi16(b, ones));
    }
    const __m256i s = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x->q[0]), _mm256_maddubs_epi16(hi, x->q[1]));
    const __m256i t = _mm256_madd_epi16(s, ones);
    return shiftc(T) ? _mm256_sub_epi32(t, x->cs) : t;
}

/* rows4: into L2, the row PF4_ROWS on (two calls ahead), as Q4_0's rows4; else into L1,
 * PF_AHEAD on in the row */
#define PF4_ROWS 8
#define PF_ADDR(row, R) ((const char *)(row) + ((R) == 4 ? PF4_ROWS * ws : PF_AHEAD))
#define PF_HINT(R) ((R) == 4 ? _MM_HINT_T1 : _MM_HINT_T0)

/* One group: scales first (Q4_1/Q5_1 add m * s to the second accumulator), then pair by
 * pair: the x side of each activation row once, each weight row's pair unpacked once and
 * used for every activation row (a whole group of unpacked rows would not fit 16
 * registers). Per (row, token) the order is fixed: min term, pairs 0-3. */
#define LGRP_STEP(T, WB, XB, PF, R, C)                                                           \
    {                                                                                            \
        __m256 sc[R][C], xd[C], xs_[C];                                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                    \
            const int xb = hasmin(T) ? (int)sizeof(hr_block_q8_1) : (int)sizeof(hr_block_q8_0);  \
            xd[c] = scales8(XB[c], xb);                                                          \
            xs_[c] = hasmin(T) ? scales8(XB[c] + 2, xb) : xd[c];                                 \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            _Pragma("GCC unroll 8") for (int o = 0; PF && o < QGRP * bsz(T); o += 64)            \
                _mm_prefetch(PF_ADDR(WB[r], R) + o, PF_HINT(R));                                 \
            const __m256 dw = w_d8(T, WB[r]);                                                    \
            const __m256 mw = hasmin(T) ? scales8(WB[r] + 2, bsz(T)) : dw;                       \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
                sc[r][c] = _mm256_mul_ps(dw, xd[c]);                                             \
                if (hasmin(T)) acc0[r][c] = _mm256_fmadd_ps(mw, xs_[c], acc0[r][c]);             \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) {                                    \
            xpair g[C];                                                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) x_pair(T, &g[c], XB[c], p);      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                __m256i lo, hi;                                                                  \
                w_pair(T, WB[r], p, &lo, &hi);                                                   \
                _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
                    const __m256 v = _mm256_cvtepi32_ps(pair_dot(T, lo, hi, &g[c]));             \
                    const __m256 sp = _mm256_permutevar8x32_ps(sc[r][c], sidx(p));               \
                    acc0[r][c] = _mm256_fmadd_ps(v, sp, acc0[r][c]);                             \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

/* y[c * ys + r] = dot(row r, activation row c) */
#define LDOT_BODY(T, WBLK, XBLK, R, C)                                                           \
    __m256 acc0[R][C];                                                   \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                      \
            acc0[r][c] = _mm256_setzero_ps();                          \
    const int64_t nb = n / HR_QK;                                                                \
    int64_t b = 0;                                                                               \
    for (; b + QGRP <= nb; b += QGRP) {                                                          \
        const char *wb_[R], *xb_[C];                                                             \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) wb_[r] = W + r * ws + b * sizeof(WBLK); \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xb_[c] = X + c * xs + b * sizeof(XBLK); \
        LGRP_STEP(T, wb_, xb_, 1, R, C)                                                          \
    }                                                                                            \
    if (b < nb) {                                                                                \
        const int64_t m = nb - b;                                                                \
        WBLK wt_[R][QGRP];                                                                       \
        XBLK xt_[C][QGRP];                                                                       \
        const char *wb_[R], *xb_[C];                                                             \
        memset(wt_, 0, sizeof wt_);                                                              \
        memset(xt_, 0, sizeof xt_);                                                              \
        for (int r = 0; r < R; r++) {                                                            \
            memcpy(wt_[r], W + r * ws + b * sizeof(WBLK), (size_t)m * sizeof(WBLK));             \
            wb_[r] = (const char *)wt_[r];                                                       \
        }                                                                                        \
        for (int c = 0; c < C; c++) {                                                            \
            memcpy(xt_[c], X + c * xs + b * sizeof(XBLK), (size_t)m * sizeof(XBLK));             \
            xb_[c] = (const char *)xt_[c];                                                       \
        }                                                                                        \
        LGRP_STEP(T, wb_, xb_, 0, R, C)                                                          \
    }                                                                                            \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                    \
        y[c * ys + r] = hsum8(acc0[r][c]);                                                         \
    }

#define LDOT_FUNCS(NAME, T, WBLK, XBLK)                                                          \
    void hr_dot_##NAME##_avx2(int64_t n, float *s, const void *w, const void *x) {              \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        LDOT_BODY(T, WBLK, XBLK, 1, 1)                                                          \
    }                                                                                           \
    void hr_tile_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs,   \
                               float *y, size_t ys) {                                           \
        const char *W = w, *X = x;                                                              \
        LDOT_BODY(T, WBLK, XBLK, HR_TILE_R, HR_TILE_C)                                          \
    }                                                                                           \
    void hr_rows2_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs,  \
                                float *y, size_t ys) {                                          \
        const char *W = w, *X = x;                                                              \
        (void)xs;                                                                               \
        LDOT_BODY(T, WBLK, XBLK, 2, 1)                                                          \
    }                                                                                           \
    void hr_rows4_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs,  \
                                float *y, size_t ys) {                                          \
        const char *W = w, *X = x;                                                              \
        (void)xs;                                                                               \
        LDOT_BODY(T, WBLK, XBLK, 4, 1)                                                          \
    }

LDOT_FUNCS(q4_1, T_Q4_1, hr_block_q4_1, hr_block_q8_1)
LDOT_FUNCS(q5_1, T_Q5_1, hr_block_q5_1, hr_block_q8_1)
LDOT_FUNCS(q5_0, T_Q5_0, hr_block_q5_0, hr_block_q8_0)
LDOT_FUNCS(iq4_nl, T_IQ4_NL, hr_block_iq4_nl, hr_block_q8_0)
LDOT_FUNCS(mxfp4, T_MXFP4, hr_block_mxfp4, hr_block_q8_0)

#endif
