/* AVX-512 (F/BW/VL/DQ + VNNI) kernels of Q4_1, Q5_1 (against Q8_1), Q5_0, IQ4_NL and
 * MXFP4 (against Q8_0), built like Q4_0's in kernels_avx512.c: groups of 8 blocks, each
 * half-group of 4 blocks in one register (lane k = block k's 16 packed bytes), so one
 * vpdpbusd pair covers 4 blocks. Every type becomes unsigned bytes u = w + c (Q5_0 c = 16;
 * IQ4_NL and MXFP4 look their values up with pshufb in a table shifted by c = 128; Q4_1,
 * Q5_1 c = 0), and the x side, shared by all weight rows of a call, carries -c * sum(x) per
 * int32 lane: the integer dot stays exact. Scales of 8 blocks come from word permutes of
 * whole-register loads and one F16 conversion (MXFP4's power-of-two scale applies with
 * scalef); Q4_1/Q5_1's 8 m * s terms ride in the upper lanes of the same product and add
 * into an accumulator. Work is ordered half-group by half-group so a row's unpacked values
 * live only while used (4 rows of whole groups would spill). Per (row, token) the arithmetic
 * is the same whatever R and C are, so vec_dot, rows2, rows4 and tiles agree bit for bit. A ragged
 * tail (n/32 not a multiple of 8) runs the same group code on zero-padded copies (zero
 * blocks add exactly +0). Activation preps are AVX2's. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#include <string.h>

#include "kquant_legacy_simd.h"

#define TGT __attribute__((target("avx512vnni")))
#define INLINE static inline __attribute__((always_inline)) TGT
#include "lanes_avx512.h"

enum { T_Q4_1, T_Q5_1, T_Q5_0, T_IQ4_NL, T_MXFP4 };
#define QGRP 8
#define PF_AHEAD 1536
#define FPF_ONE 8192

/* layout per type: block bytes, offset of qs, of qh (Q5), whether it has a min, the shift c */
INLINE int bsz(int T) { return T == T_Q4_1 ? 20 : T == T_Q5_1 ? 24 : T == T_Q5_0 ? 22 : T == T_IQ4_NL ? 18 : 17; }
INLINE int qoff(int T) { return T == T_Q4_1 ? 4 : T == T_Q5_1 ? 8 : T == T_Q5_0 ? 6 : T == T_IQ4_NL ? 2 : 1; }
INLINE int qhoff(int T) { return T == T_Q5_1 ? 4 : 2; }
INLINE int hasmin(int T) { return T == T_Q4_1 || T == T_Q5_1; }
INLINE int is5(int T) { return T == T_Q5_1 || T == T_Q5_0; }
INLINE int shiftc(int T) { return T == T_Q5_0 ? 16 : (T == T_IQ4_NL || T == T_MXFP4) ? 128 : 0; }

/* The group's bytes from 128 to its end (8 BS - 128 of them: 16, 32, 48 or 64), in the low bytes,
 * by loads that stop at the group's end: on Zen 5 a load reaching into the next group's line
 * (a 64-byte masked load as much as a plain one) made a row stream from DRAM 1.3-1.6x slower. */
INLINE __m512i ld_tail(int BS, const char *w) {
    const int nb = 8 * BS - 128;
    if (nb == 64) return _mm512_loadu_si512(w + 128);
    if (nb == 16) return _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)(w + 128)));
    const __m512i lo = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(w + 128)));
    return nb == 32 ? lo : _mm512_inserti32x4(lo, _mm_loadu_si128((const __m128i *)(w + 160)), 2);
}
INLINE __m512i widx(int base, int stride, int run) { /* word i -> base + stride*(i/run) + i%run */
    int16_t t[32];
    for (int i = 0; i < 32; i++) t[i] = (int16_t)(base + stride * (i / run) + i % run);
    return _mm512_loadu_si512(t);
}
/* word i < 16 -> scale field of block i%8 (+1 for i >= 8: the min, or Q8_1's s), block
 * stride st words, from a register pair that starts sub words into the group. Words 16-31
 * (Q5 types, qh at word qhw of a block): the low and the high halves of qh of blocks 0-3,
 * then of blocks 4-7, so that 64-bit lanes 4-7 are the 5th-bit masks of the two halves. */
INLINE __m512i sc_idx(int st, int sub, int qhw) {
    int16_t t[32];
    for (int i = 0; i < 32; i++) {
        const int k = i < 16 ? (i & 7) : ((i - 16) & 3) + ((i - 16) >= 8 ? 4 : 0);
        const int f = i < 16 ? (i >= 8) : qhw + (((i - 16) >> 2) & 1);
        t[i] = (int16_t)(st * k + f - sub);
    }
    return _mm512_loadu_si512(t);
}
INLINE __m512i quad128(const void *a, const void *b, const void *c, const void *d) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)a));
    v = _mm512_mask_broadcast_i32x4(v, 0x00f0, _mm_loadu_si128((const __m128i *)b));
    v = _mm512_mask_broadcast_i32x4(v, 0x0f00, _mm_loadu_si128((const __m128i *)c));
    return _mm512_mask_broadcast_i32x4(v, 0xf000, _mm_loadu_si128((const __m128i *)d));
}
/* lane -> block index within the group, for half p (int32 lanes 4k..4k+3: block 4p+k) */
INLINE __m512i sidx(int p) {
    const int a = 4 * p;
    return _mm512_setr_epi32(a, a, a, a, a + 1, a + 1, a + 1, a + 1, a + 2, a + 2, a + 2, a + 2, a + 3, a + 3, a + 3, a + 3);
}

/* Q5_0, IQ4_NL and MXFP4 (no min term) sum two int32 lanes per block instead of four, as
 * Q4_0 in kernels_avx512.c: a lane holds 16 products (a block's quads 0 + 2 and 1 + 3),
 * 128-bit lane k blocks k and 4 + k, so each (row, token) pair converts, scales and adds once
 * per group (lanes_avx512.h). The decode kernels fold their halves' lanes (fold_lanes); the
 * prompt tiles read activations re-laid once per batch into those lanes (hr_lanes_x) and unpack
 * each weight row's halves the same way (x_lanes). */

/* ---- x side. Half p of a group: q[0] = elements 0-15 of blocks 4p..4p+3, q[1] = 16-31;
 * nc = -c * sum(x) per int32 lane. Scales: d of the 8 blocks (lanes 0-7) and, for Q8_1,
 * s (lanes 8-15) ---- */
typedef struct { __m512i q[2], nc; } xhalf;
INLINE int xbsz(int T) { return hasmin(T) ? (int)sizeof(hr_block_q8_1) : (int)sizeof(hr_block_q8_0); }
INLINE void x_half(int T, xhalf *g, const char *x, int p) {
    const int xb = xbsz(T);
    const char *B = x + 4 * p * xb + (hasmin(T) ? 4 : 2);
    g->q[0] = quad128(B, B + xb, B + 2 * xb, B + 3 * xb);
    g->q[1] = quad128(B + 16, B + xb + 16, B + 2 * xb + 16, B + 3 * xb + 16);
    g->nc = _mm512_setzero_si512();
    if (shiftc(T)) {
        const __m512i c = _mm512_set1_epi8((char)shiftc(T));
        const __m512i s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), c, g->q[0]), c, g->q[1]);
        g->nc = _mm512_sub_epi32(_mm512_setzero_si512(), s);
    }
}
INLINE __m512 x_scales(int T, const char *x) {
    if (hasmin(T)) { /* 36-byte blocks: d, s at words 18k, 18k+1; blocks 4-7 from byte 144 */
        __m512i a = _mm512_permutex2var_epi16(_mm512_loadu_si512(x), sc_idx(18, 0, 0), _mm512_loadu_si512(x + 64));
        __m512i b = _mm512_permutex2var_epi16(_mm512_loadu_si512(x + 144), sc_idx(18, 72, 0), _mm512_loadu_si512(x + 208));
        return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_mask_blend_epi16(0xf0f0, a, b)));
    } /* 34-byte blocks: words 0, 17, 34, 51 of the first 128 bytes and of the 128 from 136 */
    __m512i a = _mm512_permutex2var_epi16(_mm512_loadu_si512(x), widx(0, 17, 1), _mm512_loadu_si512(x + 64));
    __m512i b = _mm512_permutex2var_epi16(_mm512_loadu_si512(x + 136), widx(-68, 17, 1), _mm512_loadu_si512(x + 200));
    return _mm512_zextps256_ps512(_mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_mask_blend_epi16(0xf0, a, b))));
}

/* ---- weight side. Scales of a row's group: d (lanes 0-7) and m (lanes 8-15) as floats;
 * MXFP4: 2^(e - 128) (lanes 0-7; exact, 2^-128 too, so a product by it rounds as scalef would). Q5: the
 * 5th-bit masks of elements 0-15 and 16-31 of each half, qm[2p], qm[2p+1] ---- */
INLINE __m512 w_scales(int T, const char *w, uint64_t qm[4]) {
    const int BS = bsz(T);
    const __m512i l0 = _mm512_loadu_si512(w), l1 = _mm512_loadu_si512(w + 64);
    if (T == T_MXFP4) { /* e of block k at byte 17k (< 128): dword 17k/4, byte k%4 */
        const __m512i di = _mm512_setr_epi32(0, 4, 8, 12, 17, 21, 25, 29, 0, 0, 0, 0, 0, 0, 0, 0);
        __m512i e = _mm512_permutex2var_epi32(l0, di, l1);
        e = _mm512_srlv_epi32(e, _mm512_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24, 0, 0, 0, 0, 0, 0, 0, 0));
        e = _mm512_sub_epi32(_mm512_and_si512(e, _mm512_set1_epi32(0xff)), _mm512_set1_epi32(128));
        return _mm512_scalef_ps(_mm512_set1_ps(1.0f), _mm512_cvtepi32_ps(e)); /* 2^e, exact (2^-128 too) */
    }
    if (T == T_IQ4_NL) /* 18-byte blocks: all 8 d within the first 128 bytes, words 9k */
        return _mm512_zextps256_ps512(_mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, widx(0, 9, 1), l1))));
    /* other even block sizes: every field starts on a word; 8 blocks fit 3 registers */
    const __m512i l2 = ld_tail(BS, w);
    const int st = BS / 2, qhw = qhoff(T) / 2;
    __m512i a = _mm512_permutex2var_epi16(l0, sc_idx(st, 0, qhw), l1);
    __m512i b = _mm512_permutex2var_epi16(l1, sc_idx(st, 32, qhw), l2);
    __m512i s = _mm512_mask_blend_epi16(0xff00f0f0, a, b);
    if (is5(T)) {
        const __m128i h0 = _mm512_extracti32x4_epi32(s, 2), h1 = _mm512_extracti32x4_epi32(s, 3);
        qm[0] = (uint64_t)_mm_cvtsi128_si64(h0), qm[1] = (uint64_t)_mm_extract_epi64(h0, 1);
        qm[2] = (uint64_t)_mm_cvtsi128_si64(h1), qm[3] = (uint64_t)_mm_extract_epi64(h1, 1);
    }
    if (hasmin(T)) return _mm512_cvtph_ps(_mm512_castsi512_si256(s));
    return _mm512_zextps256_ps512(_mm256_cvtph_ps(_mm512_castsi512_si128(s)));
}

/* MXFP4 half-group gather: byte j of lane k is byte k + j of lane k of a load at the first
 * block's qs (k_mx_a) when k + j < 16, else byte k + j - 3 of lane k of a load 3 bytes on
 * (k_mx_b, bytes MX_FROM_B): both loads end within the group (the second at its last byte for
 * p = 1), as a load past it costs a row stream (see ld_tail). */
#define MXA(k) k, k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7, k + 8, k + 9, k + 10, k + 11, k + 12, k + 13, k + 14, k + 15
static const int8_t k_mx_a[64] = {MXA(0), MXA(1), MXA(2), MXA(3)};
static const int8_t k_mx_b[64] = {MXA(-3), MXA(-2), MXA(-1), MXA(0)}; /* negatives unused */
#define MX_FROM_B ((__mmask64)0x0000u | (__mmask64)0x8000u << 16 | (__mmask64)0xc000u << 32 | (__mmask64)0xe000u << 48)

/* Half p of a row's group as unsigned values in the x side's lane order: lo = elements
 * 0-15 of blocks 4p..4p+3, hi = 16-31 */
INLINE void w_half(int T, const char *w, int p, const uint64_t qm[4], __m512i *lo, __m512i *hi) {
    const int BS = bsz(T);
    __m512i nib;
    if (T == T_MXFP4) { /* block k's qs at 17k + 1: lane k of a load from there, shifted by k bytes */
        const char *B = w + 4 * p * BS + 1;
        const __m512i A = _mm512_loadu_si512(B), Bv = _mm512_loadu_si512(B + 3);
        nib = _mm512_mask_shuffle_epi8(_mm512_shuffle_epi8(A, _mm512_loadu_si512(k_mx_a)), MX_FROM_B, Bv,
                                       _mm512_loadu_si512(k_mx_b));
    } else {
        const int st = BS / 2, qw = qoff(T) / 2;
        if (p == 0) nib = _mm512_permutex2var_epi16(_mm512_loadu_si512(w), widx(qw, st, 8), _mm512_loadu_si512(w + 64));
        else {
            const __m512i l2 = ld_tail(BS, w);
            nib = _mm512_permutex2var_epi16(_mm512_loadu_si512(w + 64), widx(4 * st + qw - 32, st, 8), l2);
        }
    }
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i l = _mm512_and_si512(nib, m4), h = _mm512_and_si512(_mm512_srli_epi16(nib, 4), m4);
    if (is5(T)) {
        const __m512i b4 = _mm512_set1_epi8(0x10);
        l = _mm512_mask_add_epi8(l, _cvtu64_mask64(qm[2 * p]), l, b4);
        h = _mm512_mask_add_epi8(h, _cvtu64_mask64(qm[2 * p + 1]), h, b4);
    } else if (T == T_IQ4_NL || T == T_MXFP4) { /* table values + 128 as unsigned bytes */
        const int8_t *tab = T == T_IQ4_NL ? hr_kvalues_iq4nl : hr_kvalues_mxfp4;
        const __m512i lut = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)tab)),
                                             _mm512_set1_epi8((char)0x80));
        l = _mm512_shuffle_epi8(lut, l), h = _mm512_shuffle_epi8(lut, h);
    }
    *lo = l, *hi = h;
}

/* rows4: into L2, the row PF4_ROWS on (two calls ahead), as Q4_0's rows4; else into L1,
 * PF_AHEAD on in the row */
#define PF4_ROWS 8
#define PF_ADDR(row, R) ((const char *)(row) + ((R) == 4 ? PF4_ROWS * ws : PF_AHEAD))
#define PF_HINT(R) ((R) == 4 ? _MM_HINT_T1 : _MM_HINT_T0)

/* One group: scales of all pairs first (Q4_1/Q5_1 add their m * s lanes to the second
 * accumulator), then half by half: the x side of each activation row once, each weight
 * row's half unpacked once and used for every activation row. Per (row, token) the order
 * is fixed: min term, half 0, half 1. */
#define LGRP_STEP(T, WB, XB, PF, R, C)                                                           \
    {                                                                                            \
        __m512 sc[R][C], xsc[C];                                                                 \
        uint64_t qm[R][4];                                                                       \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xsc[c] = x_scales(T, XB[c]);        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            _Pragma("GCC unroll 8") for (int o = 0; PF && o < QGRP * bsz(T); o += 64)            \
                _mm_prefetch(PF_ADDR(WB[r], R) + o, PF_HINT(R));                                 \
            const __m512 wsc = w_scales(T, WB[r], qm[r]);                                        \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
                sc[r][c] = _mm512_mul_ps(wsc, xsc[c]); /* the pair's block scales */            \
                if (hasmin(T)) acc1[r][c] = _mm512_mask_add_ps(acc1[r][c], 0xff00, acc1[r][c], sc[r][c]); \
            }                                                                                    \
        }                                                                                        \
        __m512i t0[R][C];                                                                        \
        _Pragma("GCC unroll 2") for (int p = 0; p < 2; p++) {                                    \
            xhalf g[C];                                                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) x_half(T, &g[c], XB[c], p);      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                __m512i lo, hi;                                                                  \
                w_half(T, WB[r], p, qm[r], &lo, &hi);                                            \
                _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
                    __m512i t = _mm512_dpbusd_epi32(g[c].nc, lo, g[c].q[0]);                     \
                    t = _mm512_dpbusd_epi32(t, hi, g[c].q[1]);                                   \
                    if (!hasmin(T)) { /* two lanes per block: one step per group */              \
                        if (!p) t0[r][c] = t;                                                    \
                        else acc0[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(fold_lanes(t0[r][c], t)), \
                                                          _mm512_permutexvar_ps(sidx2(), sc[r][c]), acc0[r][c]); \
                        continue;                                                                \
                    }                                                                            \
                    const __m512 v = _mm512_cvtepi32_ps(t), sp = _mm512_permutexvar_ps(sidx(p), sc[r][c]); \
                    if (p) acc1[r][c] = _mm512_fmadd_ps(v, sp, acc1[r][c]);                      \
                    else acc0[r][c] = _mm512_fmadd_ps(v, sp, acc0[r][c]);                        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        (void)t0;                                                                                \
    }

/* y[c * ys + r] = dot(row r, activation row c) */
#define LDOT_BODY(T, WBLK, XBLK, R, C)                                                           \
    __m512 acc0[R][C], acc1[R][C];                                                   \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                      \
            acc0[r][c] = acc1[r][c] = _mm512_setzero_ps();                          \
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
        y[c * ys + r] = _mm512_reduce_add_ps(hasmin(T) ? _mm512_add_ps(acc0[r][c], acc1[r][c]) : acc0[r][c]); \
    }

#define LDOT_FUNCS(NAME, T, WBLK, XBLK)                                                          \
    TGT void hr_dot_##NAME##_avx512(int64_t n, float *s, const void *w, const void *x) {        \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        LDOT_BODY(T, WBLK, XBLK, 1, 1)                                                          \
    }                                                                                           \
    TGT void hr_tile_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                     float *y, size_t ys) {                                     \
        const char *W = w, *X = x;                                                              \
        LDOT_BODY(T, WBLK, XBLK, HR_TILE_R, HR_TILE_C)                                          \
    }                                                                                           \
    TGT void hr_rows2_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                      float *y, size_t ys) {                                    \
        const char *W = w, *X = x;                                                              \
        (void)xs;                                                                               \
        LDOT_BODY(T, WBLK, XBLK, 2, 1)                                                          \
    }                                                                                           \
    TGT void hr_rows4_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                      float *y, size_t ys) {                                    \
        const char *W = w, *X = x;                                                              \
        (void)xs;                                                                               \
        LDOT_BODY(T, WBLK, XBLK, 4, 1)                                                          \
    }

/* ---- prompt tiles over activations re-laid once per batch (Q5_0, IQ4_NL, MXFP4): hr_lanes_x
 * with c = shiftc(T), Q8_0 activations as these types take them ---- */
/* R weight rows' group against C (<= HR_TILE_C) re-laid tokens, a row at a time: the row's
 * halves unpacked once into the lanes, then per token four dpbusd from -c * sum(x). */
INLINE void lx_grp_rows(int T, const char *const *wb, const char *X, size_t xs, int64_t gi,
                        __m512 (*acc)[HR_TILE_C], const int R, const int C) {
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
        uint64_t qm[4];
        const __m512 wd = _mm512_permutexvar_ps(sidx2(), w_scales(T, wb[r], qm));
        __m512i u[4];
        w_half(T, wb[r], 0, qm, &u[0], &u[1]), w_half(T, wb[r], 1, qm, &u[2], &u[3]);
        x_lanes(u);
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)
            acc[r][c] = lanes_step(u, wd, (const hr_lanes_x *)(X + c * xs) + gi, acc[r][c]);
    }
}
/* R rows x C tokens: full groups with their prefetch (one: a decode row's stream, FPF_ONE on
 * into L2; else PF_AHEAD into L1), then a ragged group over zero-padded weight blocks (the
 * re-laid row's padding is zero: +0 exactly). */
INLINE void lx_tile(int T, int R, int64_t n, const char *W, size_t ws, const char *X, size_t xs, float *y, size_t ys,
                    size_t BS, const int C, const int one) {
    __m512 acc[4][HR_TILE_C];
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps();
    const int64_t nb = n / HR_QK, nfull = nb / QGRP;
    for (int64_t gi = 0; gi < nfull; gi++) {
        const char *wb[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {
            wb[r] = W + r * ws + gi * QGRP * BS;
            for (size_t o = 0; o < QGRP * BS; o += 64) {
                if (one) _mm_prefetch(wb[r] + FPF_ONE + o, _MM_HINT_T1); /* rows4_x: one stream per row */
                else _mm_prefetch(wb[r] + PF_AHEAD + o, _MM_HINT_T0);
            }
        }
        lx_grp_rows(T, wb, X, xs, gi, acc, R, C);
    }
    if (nfull * QGRP < nb) {
        char pad[4][QGRP * 24];
        const char *wb[4];
        memset(pad, 0, sizeof pad);
        for (int r = 0; r < R; r++) {
            memcpy(pad[r], W + r * ws + nfull * QGRP * BS, (size_t)(nb - nfull * QGRP) * BS);
            wb[r] = pad[r];
        }
        lx_grp_rows(T, wb, X, xs, nfull, acc, R, C);
    }
    _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]);
}
#define LX_FUNCS(NAME, T, WBLK)                                                                            \
    size_t hr_tile_xbytes_##NAME##_avx512(int64_t n) { return hr_tile_xbytes_lanes_avx512(n); }            \
    TGT void hr_tile_xprep_##NAME##_avx512(const void *xq, void *xt, int64_t n) {                          \
        hr_tile_xprep_lanes_avx512(xq, xt, n, shiftc(T));                                                  \
    }                                                                                                      \
    TGT void hr_tile_x_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs,      \
                                       float *y, size_t ys) {                                              \
        lx_tile(T, HR_TILE_R, n, w, ws, x, xs, y, ys, sizeof(WBLK), HR_TILE_C, 0);                         \
    }                                                                                                      \
    TGT void hr_tile_xw_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs,     \
                                        float *y, size_t ys) {                                             \
        lx_tile(T, 4, n, w, ws, x, xs, y, ys, sizeof(WBLK), HR_TILE_C, 0);                                 \
    }
LX_FUNCS(q5_0, T_Q5_0, hr_block_q5_0)
LX_FUNCS(iq4_nl, T_IQ4_NL, hr_block_iq4_nl)
LX_FUNCS(mxfp4, T_MXFP4, hr_block_mxfp4)

/* Q5_0 decode over the re-laid activation row: the 4 rows one after the other, each one stream
 * prefetching 8 KB on in itself into L2, as Q8_0's rows4_x (kernels_avx512.c): from DRAM
 * 1.11-1.22x its rows4. IQ4_NL and MXFP4 keep rows4: one row at a time read them level or up to
 * 35% slower, as Q4_0; after their loads stopped at the group's end, +4-5% and level, within
 * the noise (docs/performance.md, "After it: decode row order per type again"). */
TGT void hr_rows4_x_q5_0_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    (void)xs, (void)ys;
    for (int r = 0; r < 4; r++) lx_tile(T_Q5_0, 1, n, (const char *)w + r * ws, 0, x, 0, y + r, 1, sizeof(hr_block_q5_0), 1, 1);
}

LDOT_FUNCS(q4_1, T_Q4_1, hr_block_q4_1, hr_block_q8_1)
LDOT_FUNCS(q5_1, T_Q5_1, hr_block_q5_1, hr_block_q8_1)
LDOT_FUNCS(q5_0, T_Q5_0, hr_block_q5_0, hr_block_q8_0)
LDOT_FUNCS(iq4_nl, T_IQ4_NL, hr_block_iq4_nl, hr_block_q8_0)
LDOT_FUNCS(mxfp4, T_MXFP4, hr_block_mxfp4, hr_block_q8_0)
#endif
