/* AVX2 + FMA + F16C kernels of the 32-element weight types beyond Q8_0/Q4_0: Q4_1 and
 * Q5_1 (against Q8_1), Q5_0, IQ4_NL and MXFP4 (against Q8_0), and the Q8_1 activation
 * prep; kquant_legacy_avxvnni.c compiles this file again with vpdpbusd for the AVX-VNNI table.
 * Groups of 8 blocks; scales of 8 blocks convert at once. Values become unsigned bytes u = w + c
 * (Q5_0 c = 16, MXFP4's table + 12, IQ4_NL's table + 128 with vpdpbusd; Q4_1, Q5_1 c = 0) and
 * the x side carries -c * sum(x) per int32 lane; AVX2's IQ4_NL (maddubs would saturate on
 * w + 128) moves w's sign onto x per token instead. All integer dots are exact.
 * Q5_0, IQ4_NL and MXFP4 sum two int32 lanes per block (lanes_avx2.h, as Q4_0 in
 * kernels_avx2.c): per step of 4 blocks one convert, scale product and FMA per (row, token), the
 * plain kernels over the activation blocks as they are, the prompt tiles (tile_x) and the
 * decode rows (rows4_x: the tile's row with one token, rows one after the other) over
 * activations re-laid once per batch or product (hr_lanes_x256), all through w_step and
 * step_idot. On these tables decode is compute-bound, and the re-laid row spares each call
 * the activation side: 1.1-1.2x from DRAM (docs/performance.md, "256-bit decode over the
 * re-laid row").
 * Q4_1 and Q5_1 keep a block pair per register (lane k: block 2p+k, low nibbles against
 * elements 0-15, high against 16-31), each pair's lanes converted and scaled, m * s added once
 * per group. The sequence of operations per (row, token) does not depend on how many rows or
 * tokens a call handles, so vec_dot, rows2, rows4 and tiles agree bit for bit. A ragged tail
 * (n/32 not a multiple of 8) runs the same group code on zero-padded copies (zero blocks add
 * exactly +0). */
#include "kernels_impl.h"

#if defined(HR_AVXVNNI) /* kquant_legacy_avxvnni.c */
#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
#define KL_BUILD 1
#define KL_VNNI 1
#endif
#elif defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define KL_BUILD 1
#define KL_VNNI 0
#endif

#if defined(KL_BUILD)
#include <immintrin.h>
#include <string.h>

#include "kquant_legacy_simd.h"

#define INLINE static inline __attribute__((always_inline))
#include "lanes_avx2.h"
#include "hsum_avx2.h"


#if !KL_VNNI /* both tables use this prep */
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
#endif

enum { T_Q4_1, T_Q5_1, T_Q5_0, T_IQ4_NL, T_MXFP4 };
#define QGRP 8
#define PF_AHEAD 1536
#define FPF_ONE 8192 /* a decoded row's own lead into L2 (kernels_avx2.c's) */

/* layout per type: block bytes, offset of qs, of qh (Q5), whether it has a min, the shift c */
INLINE int bsz(int T) { return T == T_Q4_1 ? 20 : T == T_Q5_1 ? 24 : T == T_Q5_0 ? 22 : T == T_IQ4_NL ? 18 : 17; }
INLINE int qoff(int T) { return T == T_Q4_1 ? 4 : T == T_Q5_1 ? 8 : T == T_Q5_0 ? 6 : T == T_IQ4_NL ? 2 : 1; }
INLINE int qhoff(int T) { return T == T_Q5_1 ? 4 : 2; }
INLINE int hasmin(int T) { return T == T_Q4_1 || T == T_Q5_1; }
INLINE int is5(int T) { return T == T_Q5_1 || T == T_Q5_0; }
INLINE int shiftc(int T) { return T == T_Q5_0 ? 16 : T == T_MXFP4 ? 12 : (T == T_IQ4_NL && KL_VNNI) ? 128 : 0; }
INLINE int signx(int T) { return T == T_IQ4_NL && !KL_VNNI; } /* x takes w's sign per token */

/* int32 lanes of 4 unsigned x signed byte products, added to acc (AVX2: maddubs' pair sums,
 * below 2^15 for every use here, then madd) */
INLINE __m256i dot4_add(__m256i acc, __m256i u, __m256i s) {
#if KL_VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* the 8 F16 fields at p, p + stride, ... as floats */
INLINE __m256 scales8(const char *p, int stride) {
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}
INLINE __m256i pidx(int p) { /* int32 lanes 0-3: block 2p, 4-7: block 2p+1 */
    return _mm256_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1);
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
INLINE __m256 w_d8(int T, const char *w) { return T == T_MXFP4 ? e8m0_half8(w) : scales8(w, bsz(T)); }

/* ---- Q5_0, IQ4_NL, MXFP4: two lanes per block ---- */
/* Step k (blocks 4k..4k+3) of a row's group in the step's lane order (pairs_lanes): u + c,
 * or AVX2 IQ4_NL's signed values. A block's bytes 0-7 hold elements 0-7 (low nibbles) and
 * 16-23 (high), bytes 8-15 elements 8-15 and 24-31. */
INLINE void w_step(int T, const char *w, int k, __m256i u[4]) {
    const int BS = bsz(T);
    const char *B = w + 4 * k * BS;
    const __m256i v0 = two128(B + qoff(T), B + BS + qoff(T)), v1 = two128(B + 2 * BS + qoff(T), B + 3 * BS + qoff(T));
    const __m256i na = _mm256_unpacklo_epi64(v0, v1), nb = _mm256_unpackhi_epi64(v0, v1), m4 = _mm256_set1_epi8(0x0f);
    u[0] = _mm256_and_si256(na, m4), u[1] = _mm256_and_si256(_mm256_srli_epi16(na, 4), m4);
    u[2] = _mm256_and_si256(nb, m4), u[3] = _mm256_and_si256(_mm256_srli_epi16(nb, 4), m4);
    if (T == T_Q5_0) { /* 0x10 where the element's qh bit is set; qword lanes: blocks 4k, 4k+2, 4k+1, 4k+3 */
        uint32_t h[4];
        for (int i = 0; i < 4; i++) memcpy(&h[i], B + i * BS + qhoff(T), 4);
        const __m256i v = _mm256_setr_epi64x(h[0], h[2], h[1], h[3]);
        const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull), b4 = _mm256_set1_epi8(0x10);
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) { /* qh byte of u[i]: 0, 2, 1, 3 */
            const long long sel = (long long)(0x0101010101010101ull * (unsigned)((i & 1) * 2 + (i >> 1)));
            const __m256i idx = _mm256_add_epi8(_mm256_set1_epi64x(sel), _mm256_setr_epi64x(0, 0x0808080808080808, 0, 0x0808080808080808));
            const __m256i m = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, idx), bit), bit);
            u[i] = _mm256_or_si256(u[i], _mm256_and_si256(m, b4));
        }
    } else if (T == T_IQ4_NL || T == T_MXFP4) {
        __m256i lut = _mm256_broadcastsi128_si256(
            _mm_loadu_si128((const __m128i *)(T == T_IQ4_NL ? hr_kvalues_iq4nl : hr_kvalues_mxfp4)));
        lut = _mm256_add_epi8(lut, _mm256_set1_epi8((char)shiftc(T)));
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) u[i] = _mm256_shuffle_epi8(lut, u[i]);
    }
}
/* x side of step k: the blocks in the step's lane order, -c * sum(x) per lane */
typedef struct { __m256i q[4], nc; } xstep;
INLINE void x_step(int T, xstep *g, const char *x, int k) {
    q8_lanes4((const hr_block_q8_0 *)x + 4 * k, g->q);
    g->nc = _mm256_setzero_si256();
    if (shiftc(T)) {
        const __m256i c = _mm256_set1_epi8((char)shiftc(T));
        __m256i s = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) s = dot4_add(s, c, g->q[i]);
        g->nc = _mm256_sub_epi32(_mm256_setzero_si256(), s);
    }
}
/* exact int32 lanes of a step of one (row, token) */
INLINE __m256i step_idot(int T, const __m256i u[4], const __m256i q[4], __m256i nc) {
    if (signx(T)) { /* |w| against x with w's sign */
        __m256i t = _mm256_setzero_si256();
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) t = dot4_add(t, _mm256_sign_epi8(u[i], u[i]), _mm256_sign_epi8(q[i], u[i]));
        return t;
    }
#if KL_VNNI
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) nc = _mm256_dpbusd_avx_epi32(nc, u[i], q[i]);
    return nc;
#else /* u <= 31: the lane's 16 products stay within 4 * 2 * 31 * 127 = 31496 in int16 */
    const __m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(u[0], q[0]), _mm256_maddubs_epi16(u[1], q[1]));
    const __m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(u[2], q[2]), _mm256_maddubs_epi16(u[3], q[3]));
    return _mm256_add_epi32(nc, _mm256_madd_epi16(_mm256_add_epi16(a, b), _mm256_set1_epi16(1)));
#endif
}

/* ---- Q4_1, Q5_1: a block pair per register ---- */
/* x side of pair p of a group: q[0] = elements 0-15 of blocks 2p, 2p+1, q[1] = 16-31 */
typedef struct { __m256i q[2]; } xpair;
INLINE void x_pair(xpair *g, const char *x, int p) {
    const int xb = (int)sizeof(hr_block_q8_1);
    const char *B = x + 2 * p * xb + 4;
    g->q[0] = two128(B, B + xb);
    g->q[1] = two128(B + 16, B + xb + 16);
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
/* pair p of a row's group in the x side's lane order (lo: elements 0-15 of blocks 2p, 2p+1,
 * hi: 16-31) */
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
    }
    *lo = l, *hi = h;
}
/* exact int32 lanes of one pair's dot (u <= 31) */
INLINE __m256i pair_dot(__m256i lo, __m256i hi, const xpair *x) {
    return dot4_add(dot4_add(_mm256_setzero_si256(), lo, x->q[0]), hi, x->q[1]);
}

/* rows4: into L2, the row PF4_ROWS on (two calls ahead), as Q4_0's rows4; else into L1,
 * PF_AHEAD on in the row */
#define PF4_ROWS 8
#define PF_ADDR(row, R) ((const char *)(row) + ((R) == 4 ? PF4_ROWS * ws : PF_AHEAD))
#define PF_HINT(R) ((R) == 4 ? _MM_HINT_T1 : _MM_HINT_T0)

/* One group of Q4_1/Q5_1: scales first (m * s into acc0), then pair by pair: the x side of
 * each activation row once, each weight row's pair unpacked once and used for every activation
 * row (a whole group of unpacked rows would not fit 16 registers). Per (row, token) the order
 * is fixed: min term, pairs 0-3. */
#define LGRP_PAIRS(T, WB, XB, R, C)                                                              \
    {                                                                                            \
        __m256 sc[R][C], xd[C], xs_[C];                                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                    \
            xd[c] = scales8(XB[c], (int)sizeof(hr_block_q8_1));                                  \
            xs_[c] = scales8(XB[c] + 2, (int)sizeof(hr_block_q8_1));                             \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            const __m256 dw = w_d8(T, WB[r]), mw = scales8(WB[r] + 2, bsz(T));                   \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
                sc[r][c] = _mm256_mul_ps(dw, xd[c]);                                             \
                acc0[r][c] = _mm256_fmadd_ps(mw, xs_[c], acc0[r][c]);                            \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) {                                    \
            xpair g[C];                                                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) x_pair(&g[c], XB[c], p);      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                __m256i lo, hi;                                                                  \
                w_pair(T, WB[r], p, &lo, &hi);                                                   \
                _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
                    const __m256 v = _mm256_cvtepi32_ps(pair_dot(lo, hi, &g[c]));                \
                    const __m256 sp = _mm256_permutevar8x32_ps(sc[r][c], pidx(p));               \
                    acc0[r][c] = _mm256_fmadd_ps(v, sp, acc0[r][c]);                             \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }
/* One group of Q5_0/IQ4_NL/MXFP4: step by step, the x side of each activation row once, each
 * weight row's step unpacked once; step 0 into acc0, step 1 into acc1 (as tile_x). */
#define LGRP_STEPS(T, WB, XB, R, C)                                                              \
    {                                                                                            \
        __m256 sc[R][C], xd[C];                                                                  \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xd[c] = scales8(XB[c], (int)sizeof(hr_block_q8_0)); \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            const __m256 dw = w_d8(T, WB[r]);                                                    \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) sc[r][c] = _mm256_mul_ps(dw, xd[c]); \
        }                                                                                        \
        _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {                                    \
            xstep g[C];                                                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) x_step(T, &g[c], XB[c], k);      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                __m256i u[4];                                                                    \
                w_step(T, WB[r], k, u);                                                          \
                _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
                    const __m256 v = _mm256_cvtepi32_ps(step_idot(T, u, g[c].q, g[c].nc));       \
                    const __m256 sp = _mm256_permutevar8x32_ps(sc[r][c], sidx(k));               \
                    if (k) acc1[r][c] = _mm256_fmadd_ps(v, sp, acc1[r][c]);                      \
                    else acc0[r][c] = _mm256_fmadd_ps(v, sp, acc0[r][c]);                        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }
#define LGRP_STEP(T, WB, XB, PF, R, C)                                                           \
    {                                                                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
            _Pragma("GCC unroll 8") for (int o = 0; PF && o < QGRP * bsz(T); o += 64)            \
                _mm_prefetch(PF_ADDR(WB[r], R) + o, PF_HINT(R));                                 \
        if (hasmin(T)) LGRP_PAIRS(T, WB, XB, R, C) else LGRP_STEPS(T, WB, XB, R, C)              \
    }

/* y[c * ys + r] = dot(row r, activation row c) */
#define LDOT_BODY(T, WBLK, XBLK, R, C)                                                           \
    __m256 acc0[R][C], acc1[R][C];                                                               \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                      \
            acc0[r][c] = acc1[r][c] = _mm256_setzero_ps();                                       \
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
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                      \
            y[c * ys + r] = hsum8(hasmin(T) ? acc0[r][c] : _mm256_add_ps(acc0[r][c], acc1[r][c]));

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

/* ---- prompt tiles and decode rows over activations re-laid once (Q5_0, IQ4_NL, MXFP4):
 * hr_lanes_x256 with c = shiftc(T). The tile's rows one after the other, a row's step unpacked
 * once for its 4 tokens (4 x 2 accumulators and the step's registers fit 16). ---- */
INLINE void lx_grp1(int T, const char *wb, const char *X, size_t xs, int64_t gi, __m256 *acc0, __m256 *acc1, const int C) {
    const __m256 dw = w_d8(T, wb);
    _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {
        __m256i u[4];
        w_step(T, wb, k, u);
        const __m256 wd = _mm256_permutevar8x32_ps(dw, sidx(k));
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {
            const hr_lanes_x256 *g = (const hr_lanes_x256 *)(X + c * xs) + gi;
            const __m256 t = _mm256_cvtepi32_ps(step_idot(T, u, g->q[k], g->nc[k]));
            const __m256 sk = _mm256_mul_ps(wd, g->ds[k]);
            if (k) acc1[c] = _mm256_fmadd_ps(t, sk, acc1[c]);
            else acc0[c] = _mm256_fmadd_ps(t, sk, acc0[c]);
        }
    }
}
/* C tokens; with one (rows4_x, decode) a row streamed on its own, prefetching FPF_ONE on in
 * itself into L2 as Q4_0's and Q8_0's rows4_x, rather than a tile's rows (PF_AHEAD into L1) */
INLINE void lx_row(int T, int64_t n, const char *W, const char *X, size_t xs, float *y, size_t ys, const int C) {
    const int BS = bsz(T);
    const int64_t nb = n / HR_QK, nfull = nb / QGRP;
    __m256 acc0[HR_TILE_C], acc1[HR_TILE_C];
    _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();
    for (int64_t gi = 0; gi < nfull; gi++) {
        const char *wb = W + gi * QGRP * BS;
        for (int o = 0; o < QGRP * BS; o += 64) {
            if (C == 1) _mm_prefetch(wb + FPF_ONE + o, _MM_HINT_T1);
            else _mm_prefetch(wb + PF_AHEAD + o, _MM_HINT_T0);
        }
        lx_grp1(T, wb, X, xs, gi, acc0, acc1, C);
    }
    if (nfull * QGRP < nb) {
        char pad[QGRP * 24];
        memset(pad, 0, sizeof pad);
        memcpy(pad, W + nfull * QGRP * BS, (size_t)((nb - nfull * QGRP) * BS));
        lx_grp1(T, pad, X, xs, nfull, acc0, acc1, C);
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) y[c * ys] = hsum8(_mm256_add_ps(acc0[c], acc1[c]));
}
#define LX_FUNCS(NAME, T)                                                                               \
    void hr_tile_xprep_##NAME##_avx2(const void *xq, void *xt, int64_t n) {                             \
        hr_tile_xprep_lanes_avx2(xq, xt, n, shiftc(T));                                                 \
    }                                                                                                   \
    void hr_tile_x_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                 size_t ys) {                                                           \
        for (int r = 0; r < HR_TILE_R; r++) lx_row(T, n, (const char *)w + r * ws, x, xs, y + r, ys, HR_TILE_C);    \
    }                                                                                                   \
    void hr_rows4_x_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, \
                                  size_t ys) {                                                          \
        (void)xs, (void)ys;                                                                             \
        for (int r = 0; r < 4; r++) lx_row(T, n, (const char *)w + r * ws, x, 0, y + r, 1, 1);          \
    }
LX_FUNCS(q5_0, T_Q5_0)
LX_FUNCS(iq4_nl, T_IQ4_NL)
LX_FUNCS(mxfp4, T_MXFP4)

#endif
