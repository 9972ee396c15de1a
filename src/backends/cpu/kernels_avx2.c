/* AVX2 + FMA + F16C kernels. Each output of a tile uses exactly the arithmetic of
 * vec_dot for that pair, so decode and prompt results agree bit for bit. Float
 * types: 16 elements per step as t = w0*x0; t = fma(w1, x1, t); acc += t (short
 * dependency chain on acc), an 8-wide step, then a scalar tail for odd lengths.
 * Quantized types: integer dots (exact) into two int32 lanes per block (Q4_0, Q8_0:
 * steps of 4 blocks), converted to float and scaled by d_w*d_x per lane, alternating
 * between two accumulators (groups of 8 blocks, see below). Weight rows are prefetched
 * ahead (decode streams them from DRAM). */
#include "kernels_impl.h"
#include "attn_v.h"
#include "kquant_legacy_simd.h"

#if defined(HR_AVXVNNI) /* kernels_avxvnni.c: this file again, with vpdpbusd */
#define K_TABLE_NAME "avxvnni"
#define K_TABLE_FN hr_kext_avxvnni
#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__AVXVNNI__)
#define K_BUILD 1
#endif
#else
#define K_TABLE_NAME "avx2"
#define K_TABLE_FN hr_kext_avx2
#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define K_BUILD 1
#endif
#endif
#if defined(K_BUILD)
#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#include "lanes_avx2.h"
#include "hsum_avx2.h"

/* ---- float types: loads of 8 elements as F32, and the scalar value of one ---- */
INLINE __m256 ld_f32(const void *p, int64_t i) { return _mm256_loadu_ps((const float *)p + i); }
INLINE __m256 ld_f16(const void *p, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
}
INLINE __m256 ld_bf16(const void *p, int64_t i) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
INLINE float sc_f32(const void *p, int64_t i) { /* memcpy: rows need not be 4-byte aligned */
    float f;
    memcpy(&f, (const char *)p + 4 * i, 4);
    return f;
}
INLINE uint16_t ld_u16(const void *p, int64_t i) {
    uint16_t h;
    memcpy(&h, (const char *)p + 2 * i, 2);
    return h;
}
INLINE float sc_f16(const void *p, int64_t i) { return _cvtsh_ss(ld_u16(p, i)); }
INLINE float sc_bf16(const void *p, int64_t i) { return hr_bf16_to_f32(ld_u16(p, i)); }

/* R x C dot products of float-type rows; R, C are compile-time constants at each use. */
/* Weight rows stream from DRAM. Kernels of 4 rows (decode over contiguous rows) read their
 * rows side by side and prefetch into L2 the same offset PF4_ROWS rows on (two calls ahead):
 * 4 streams one row long each, which the hardware prefetcher follows badly; with the same
 * prefetch into L1 one call ahead (what it was) they read 17-33% slower from DRAM (Q4_0 6%),
 * and one row at a time (vec_dot per row: one stream, no shared activation work) up to 44%
 * slower (floats; Q4_0 level) (bench_kernels kq, docs/performance.md). Others prefetch
 * PF_AHEAD bytes ahead in the same row into L1. Used where ws (row stride) is in scope.
 * The float types' rows4 is now one row after the other after all, each row prefetching
 * FPF_ONE bytes on in itself into L2 (not PF_AHEAD into L1, as vec_dot did when measured so):
 * on Zen 5 F16 decode gained 1.1x over the rows side by side (docs/performance.md, "F16
 * decode rows"). Q8_0 and Q4_0 decode the same way over the activation row re-laid once per
 * product (rows4_x: their kernels are compute-bound here, and it spares every call the
 * activation side; Q4_0 1.25-1.3x, docs/performance.md, "256-bit decode over the re-laid
 * row"). */
#define PF_AHEAD 1536
#define PF4_ROWS 8
#define FPF_ONE 8192
#define PF(p, R)                                                                         \
    do {                                                                                 \
        if ((R) == 4) _mm_prefetch((const char *)((uintptr_t)(p) + PF4_ROWS * ws), _MM_HINT_T1); \
        else _mm_prefetch((const char *)((uintptr_t)(p) + PF_AHEAD), _MM_HINT_T0);       \
    } while (0)

/* ROW(r): row r's first byte; PFX(r, off, R): the prefetch for bytes off.. of row r. Strided rows
 * (dot, tiles, rows2/4) as above; gather4 takes row pointers and prefetches the rows its
 * caller passes next, at the offset it reads (see gather4 in kernels_impl.h). */
#define FROW_STRIDED(r) (W + (r) * ws)
#define FPF_STRIDED(r, off, R_)                                                                     \
    do {                                                                                            \
        if ((R_) == 1) _mm_prefetch((const char *)(FROW_STRIDED(r) + (off) + FPF_ONE), _MM_HINT_T1); \
        else PF(FROW_STRIDED(r) + (off), R_);                                                       \
    } while (0)
#define FROW_GATHER(r) ((const char *)wr[r])
#define FPF_GATHER(r, off, R_) _mm_prefetch((const char *)nx[r] + (off), _MM_HINT_T1)
#define FDOT_BODY(LD, SC, ES, R, C) FDOT_BODY_AT(LD, SC, ES, R, C, FROW_STRIDED, FPF_STRIDED, LD, SC)
/* LDX, SCX: how the activations load (tile_x, rows4_x: F32 rows re-laid from F16/BF16 ones) */
#define FDOT_BODY_AT(LD, SC, ES, R, C, ROW, PFX, LDX, SCX)                                      \
    __m256 acc[R][C];                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps(); \
    int64_t i = 0;                                                                           \
    for (; i + 16 <= n; i += 16) {                                                           \
        __m256 x0[C], x1[C];                                                                 \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
            x0[c] = LDX(X + c * xs, i);                                                      \
            x1[c] = LDX(X + c * xs, i + 8);                                                  \
        }                                                                                    \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            if ((i * ES) % 64 == 0) PFX(r, i * ES, R);                                          \
            if (ES == 4) PFX(r, i * ES + 32, R);                                                \
            __m256 w0 = LD(ROW(r), i), w1 = LD(ROW(r), i + 8);                               \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
                __m256 t = _mm256_mul_ps(w0, x0[c]);                                         \
                t = _mm256_fmadd_ps(w1, x1[c], t);                                           \
                acc[r][c] = _mm256_add_ps(acc[r][c], t);                                     \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    if (i + 8 <= n) {                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            __m256 w0 = LD(ROW(r), i);                                                       \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                              \
                acc[r][c] = _mm256_fmadd_ps(w0, LDX(X + c * xs, i), acc[r][c]);              \
        }                                                                                    \
        i += 8;                                                                              \
    }                                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
        float tail = 0.0f;                                                                   \
        for (int64_t j = i; j < n; j++) tail += SC(ROW(r), j) * SCX(X + c * xs, j);          \
        y[c * ys + r] = hsum8(acc[r][c]) + tail;                                             \
    }

#define FDOT_FUNCS(NAME, LD, SC, ES)                                                        \
    static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {            \
        const char *W = w, *X = x;                                                         \
        const size_t ws = 0, xs = 0, ys = 0;                                               \
        float *y = s;                                                                      \
        FDOT_BODY(LD, SC, ES, 1, 1)                                                            \
    }                                                                                      \
    static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                            float *y, size_t ys) {                                         \
        const char *W = w, *X = x;                                                         \
        FDOT_BODY(LD, SC, ES, HR_TILE_R, HR_TILE_C)                                            \
    }                                                                                      \
    static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                             float *y, size_t ys) {                                        \
        const char *W = w, *X = x;                                                         \
        FDOT_BODY(LD, SC, ES, 2, 1)                                                            \
    }                                                                                      \
    static void rows4_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                             float *y, size_t ys) { /* one row after the other (FPF_ONE) */ \
        (void)xs, (void)ys;                                                                \
        for (int r = 0; r < 4; r++) dot_##NAME(n, y + r, (const char *)w + r * ws, x);     \
    }                                                                                      \
    static void gather4_##NAME(int64_t n, const void *const *wr, const void *const *nx,    \
                               const void *x, float *y) {                                  \
        const char *X = x;                                                                 \
        const size_t xs = 0, ys = 0;                                                       \
        FDOT_BODY_AT(LD, SC, ES, 4, 1, FROW_GATHER, FPF_GATHER, LD, SC)                    \
    }

FDOT_FUNCS(f32, ld_f32, sc_f32, 4)
FDOT_FUNCS(f16, ld_f16, sc_f16, 2)
FDOT_FUNCS(bf16, ld_bf16, sc_bf16, 2)

/* ---- BF16 over activations re-laid as F32 (tile_x, rows4_x) ----
 * act_prep rounds the activations to BF16; the re-laid row holds them converted to F32, which is
 * exact, so the prompt tile and the decode rows load them as they are instead of widening them
 * again (two operations per 8) for every row or pair of rows: the same values in the same
 * operations, so dot_bf16's bits. On Zen 5 the 64-token prompt tile ran 1.12-1.17x and rows4 from
 * DRAM 1.05-1.25x. F16 keeps converting: its conversion is one operation, and the F32 row's twice
 * as many bytes made its tile 0.9x and its decode level (docs/performance.md). */
static size_t tile_xbytes_f32(int64_t n) { return (size_t)n * 4; }
static void tile_xprep_bf16(const void *xq, void *xt, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps((float *)xt + i, ld_bf16(xq, i));
    for (; i < n; i++) ((float *)xt)[i] = sc_bf16(xq, i);
}
static void tile_x_bf16(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const char *W = w, *X = x;
    FDOT_BODY_AT(ld_bf16, sc_bf16, 2, HR_TILE_R, HR_TILE_C, FROW_STRIDED, FPF_STRIDED, ld_f32, sc_f32)
}
static void row_x_bf16(int64_t n, const void *w, const void *x, float *y) {
    const char *W = w, *X = x;
    const size_t ws = 0, xs = 0, ys = 0;
    FDOT_BODY_AT(ld_bf16, sc_bf16, 2, 1, 1, FROW_STRIDED, FPF_STRIDED, ld_f32, sc_f32)
}
static void rows4_x_bf16(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    (void)xs, (void)ys; /* one row after the other (FPF_ONE) */
    for (int r = 0; r < 4; r++) row_x_bf16(n, (const char *)w + r * ws, x, y + r);
}

/* ---- activation prep ---- */
static void prep_f32(const float *x, void *xq, int64_t n) { memcpy(xq, x, (size_t)n * 4); }

#if !defined(HR_AVXVNNI) /* the AVX-VNNI table uses these */
void hr_prep_f16_avx2(const float *x, void *xq, int64_t n) {
    uint16_t *h = xq;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    hr_prep_f16_scalar(x + i, h + i, n - i);
}

/* Same rounding as hr_f32_to_bf16 (NaN quieted, else nearest even), 8 at a time. */
void hr_prep_bf16_avx2(const float *x, void *xq, int64_t n) {
    uint16_t *h = xq;
    int64_t i = 0;
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
        __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
        __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
        __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
        r = _mm256_blendv_epi8(r, q, is_nan);
        /* pack 32->16 bits (values < 65536, so unsigned saturation is exact) */
        __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
        _mm_storeu_si128((__m128i *)(h + i), _mm_packus_epi32(lo, hi));
    }
    hr_prep_bf16_scalar(x + i, h + i, n - i);
}

/* llama.cpp's x86 quantize_row_q8_0: amax, d = amax/127, id = 127/amax, round to even. */
void hr_prep_q8_0_avx2(const float *x, void *xq, int64_t n) {
    hr_block_q8_0 *y = xq;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / HR_QK; b++, x += HR_QK) {
        __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
        __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
        __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        y[b].d = hr_f32_to_f16(amax / 127.f);
        const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
        __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        i0 = _mm256_packs_epi32(i0, i1);
        i2 = _mm256_packs_epi32(i2, i3);
        i0 = _mm256_packs_epi16(i0, i2);
        i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)y[b].qs, i0);
    }
}
#endif

/* ---- quantized types ----
 * Groups of 8 blocks. Per group and activation row, the x-side work (loads, the 8 x
 * scales, Q4_0's lane order and -8*sum(x) term) is done once and shared by all weight
 * rows of the kernel; per weight row the 8 block scales are converted at once and each
 * block (Q8_0) or 4 blocks (Q4_0) take their lanes' scales with one permute. Per
 * (row, token) the arithmetic does not depend on R and C, so dot, rows4, rows2,
 * gather4 and tiles agree bit for bit. A ragged tail (n/32 not a multiple of 8) runs the same
 * group code on zero-padded copies (zero blocks add exactly +0). */
#define QGRP 8

/* the 8 F16 scales at p, p + stride, ... as floats */
INLINE __m256 scales8(const char *p, size_t stride) {
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

/* Integer dots, int32 lanes of 4 unsigned x signed byte products. AVX2: maddubs' int16 pair
 * sums (no pair here overflows but Q8_0's w = -128 against x = -128) added up by madd; the
 * AVX-VNNI build of this file (kernels_avxvnni.c) sums all four in one vpdpbusd, exactly. Q4_0
 * sums four such dots (two quads' low and high nibbles) per lane, with its -8 * sum(x) term. */
#if defined(HR_AVXVNNI)
INLINE __m256i dot4(__m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s); }
INLINE __m256i dot4x2(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
    return _mm256_dpbusd_avx_epi32(dot4(u0, s0), u1, s1);
}
/* Q4_0's lanes from n (its -8 * sum(x) term): the dots continue the sum */
INLINE __m256i dot4x2_from(__m256i n, __m256i u0, __m256i s0, __m256i u1, __m256i s1) {
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(n, u0, s0), u1, s1);
}
INLINE __m256i dot4x4_from(__m256i n, const __m256i u[4], const __m256i s[4]) {
    return dot4x2_from(dot4x2_from(n, u[0], s[0], u[1], s[1]), u[2], s[2], u[3], s[3]);
}
#else
INLINE __m256i dot4(__m256i u, __m256i s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)); }
INLINE __m256i dot4x2(__m256i u0, __m256i s0, __m256i u1, __m256i s1) {
    return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1)), _mm256_set1_epi16(1));
}
/* Q4_0's lanes from n (its -8 * sum(x) term); four nibble dots of a lane: int16 sums of
 * nibbles (<= 15) x int8 stay within 15360 */
INLINE __m256i dot4x4_from(__m256i n, const __m256i u[4], const __m256i s[4]) {
    const __m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(u[0], s[0]), _mm256_maddubs_epi16(u[1], s[1]));
    const __m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(u[2], s[2]), _mm256_maddubs_epi16(u[3], s[3]));
    return _mm256_add_epi32(n, _mm256_madd_epi16(_mm256_add_epi16(a, b), _mm256_set1_epi16(1)));
}
#endif

/* x side. Q8_0: the blocks as they are (loaded where used: 8 registers held across rows
 * would spill). Q4_0, per pair p of blocks (2p, 2p+1): q[2p] = elements 0-15 of both (the low
 * nibbles' partners), q[2p+1] = elements 16-31, n8[p] = -8 * sum(x) over each int32 lane's
 * bytes, and nf[k] the same over step k's lanes (AVX2's fold adds it after the madd). */
typedef struct { __m256i q[8], n8[4], nf[2]; __m256 d; const hr_block_q8_0 *x; } xgrp;
INLINE void x_grp(xgrp *g, const hr_block_q8_0 *x, int q4) {
    if (q4) {
        const __m256i eight = _mm256_set1_epi8(8);
        for (int p = 0; p < 4; p++) {
            g->q[2 * p] = two128(x[2 * p].qs, x[2 * p + 1].qs);
            g->q[2 * p + 1] = two128(x[2 * p].qs + 16, x[2 * p + 1].qs + 16);
            g->n8[p] = _mm256_sub_epi32(_mm256_setzero_si256(), dot4x2(eight, g->q[2 * p], eight, g->q[2 * p + 1]));
        }
#if !defined(HR_AVXVNNI) /* AVX2's w_idot_q4_0 adds the steps' terms; AVX-VNNI's dots start from n8 */
        for (int k = 0; k < 2; k++) g->nf[k] = fold_lanes(g->n8[2 * k], g->n8[2 * k + 1], 0);
#endif
    }
    g->x = x;
    g->d = scales8((const char *)&x[0].d, sizeof(hr_block_q8_0));
}

/* int32 lanes of step k: blocks 4k..4k+3, two lanes per block of 16 products each (lanes 4j
 * and 4j + 1: block 4k + j's quads 0 + 2 and 1 + 3; lanes 4j + 2 and 4j + 3 the same of block
 * 4k + 2 + j), so a (row, token) pair converts, scales and adds once per 4 blocks where Q4_0
 * took one per pair of blocks and Q8_0 one per block. Q4_0 forms the pairs' quad lanes (pair
 * 2k: block 4k + j in 128-bit lane j, pair 2k + 1: block 4k + 2 + j) and folds them within
 * 128-bit lanes; tile_x's re-laid activations give the same lanes directly. */
#if defined(HR_AVXVNNI) /* each pair's dots continue from its -8 * sum(x); the int32 lanes fold */
INLINE __m256i pair_q4_0(const hr_block_q4_0 *B, const __m256i *q, __m256i n8) {
    const __m256i m = _mm256_set1_epi8(0x0f), v = two128(B[0].qs, B[1].qs);
    return dot4x2_from(n8, _mm256_and_si256(v, m), q[0], _mm256_and_si256(_mm256_srli_epi16(v, 4), m), q[1]);
}
INLINE __m256i w_idot_q4_0(const void *w, int k, const xgrp *g) {
    const hr_block_q4_0 *B = (const hr_block_q4_0 *)w + 4 * k;
    return fold_lanes(pair_q4_0(B, &g->q[4 * k], g->n8[2 * k]), pair_q4_0(B + 2, &g->q[4 * k + 2], g->n8[2 * k + 1]), 0);
}
#else /* the pairs' int16 sums fold before the one madd (<= 15360 each, as dot4x4_from's) */
INLINE __m256i pair16_q4_0(const hr_block_q4_0 *B, const __m256i *q) {
    const __m256i m = _mm256_set1_epi8(0x0f), v = two128(B[0].qs, B[1].qs);
    return _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v, m), q[0]),
                            _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m), q[1]));
}
INLINE __m256i w_idot_q4_0(const void *w, int k, const xgrp *g) {
    const hr_block_q4_0 *B = (const hr_block_q4_0 *)w + 4 * k;
    const __m256i f = fold_lanes(pair16_q4_0(B, &g->q[4 * k]), pair16_q4_0(B + 2, &g->q[4 * k + 2]), 1);
    return _mm256_add_epi32(g->nf[k], _mm256_madd_epi16(f, _mm256_set1_epi16(1)));
}
#endif
/* Q8_0: each block's 8 lanes as vec_dot had them (a block per 256 bits), then folded: the two
 * 128-bit halves of blocks j and j + 1 added, then fold_lanes of the two pairs. */
INLINE __m256i w_idot_q8_0(const void *w, int k, const xgrp *g) {
    const hr_block_q8_0 *B = (const hr_block_q8_0 *)w + 4 * k, *X = g->x + 4 * k;
    __m256i t[4];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)B[i].qs);
        t[i] = dot4(_mm256_sign_epi8(v, v), _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)X[i].qs), v));
    }
    const __m256i s01 = _mm256_add_epi32(_mm256_permute2x128_si256(t[0], t[1], 0x20), _mm256_permute2x128_si256(t[0], t[1], 0x31));
    const __m256i s23 = _mm256_add_epi32(_mm256_permute2x128_si256(t[2], t[3], 0x20), _mm256_permute2x128_si256(t[2], t[3], 0x31));
    return fold_lanes(s01, s23, 0);
}

/* Weight scales of all R rows first, then one activation row at a time, so only one
 * x group is live (tiles would spill holding C of them). PFX(PB[r] + o, R) prefetches
 * for the group's bytes o.. of row r (PB: the group in the row the prefetch is for). */
#define QGRP_STEP(WB, PB, PFX, XB, IDOT, Q4, PFON, R, C)                                          \
    {                                                                                            \
        __m256 dw[R];                                                                            \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            _Pragma("GCC unroll 8") for (int o = 0; PFON && o < QGRP * (int)WBS; o += 64) PFX(PB[r] + o, R); \
            dw[r] = scales8(WB[r], WBS);                                                         \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                    \
            xgrp g;                                                                              \
            x_grp(&g, XB[c], Q4);                                                                \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
                const __m256 s = _mm256_mul_ps(dw[r], g.d);                                      \
                _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {                            \
                    __m256 v = _mm256_cvtepi32_ps(IDOT(WB[r], k, &g));                           \
                    __m256 sk = _mm256_permutevar8x32_ps(s, sidx(k));                            \
                    if (k & 1) acc1[r][c] = _mm256_fmadd_ps(v, sk, acc1[r][c]);                  \
                    else acc0[r][c] = _mm256_fmadd_ps(v, sk, acc0[r][c]);                        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    }

/* ROW(r): row r's first byte; PROW(r): the row whose bytes PFX prefetches at the offsets
 * read in row r (strided: the row itself, PF adds the distance; gather4: its nx row). */
#define QROW_STRIDED(r) (W + (r) * ws)
#define QROW_GATHER(r) ((const char *)wr[r])
#define QPROW_GATHER(r) ((const char *)nx[r])
#define QPF_GATHER(p, R_) _mm_prefetch((p), _MM_HINT_T1)
#define QDOT_BODY(WBLK, IDOT, Q4, R, C) QDOT_BODY_AT(WBLK, IDOT, Q4, R, C, QROW_STRIDED, QROW_STRIDED, PF)
#define QDOT_BODY_AT(WBLK, IDOT, Q4, R, C, ROW, PROW, PFX)                                       \
    __m256 acc0[R][C], acc1[R][C];                                                               \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc0[r][c] = acc1[r][c] = _mm256_setzero_ps(); \
    const int64_t nb = n / HR_QK;                                                                \
    int64_t b = 0;                                                                               \
    for (; b + QGRP <= nb; b += QGRP) {                                                          \
        const char *wb_[R], *pb_[R];                                                             \
        const hr_block_q8_0 *xb_[C];                                                             \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                    \
            wb_[r] = ROW(r) + b * WBS;                                                           \
            pb_[r] = PROW(r) + b * WBS;                                                          \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xb_[c] = (const hr_block_q8_0 *)(X + c * xs) + b; \
        QGRP_STEP(wb_, pb_, PFX, xb_, IDOT, Q4, 1, R, C)                                         \
    }                                                                                            \
    if (b < nb) {                                                                                \
        const int64_t m = nb - b;                                                                \
        WBLK wt_[R][QGRP];                                                                       \
        hr_block_q8_0 xt_[C][QGRP];                                                              \
        const char *wb_[R];                                                                      \
        const hr_block_q8_0 *xb_[C];                                                             \
        memset(wt_, 0, sizeof wt_);                                                              \
        memset(xt_, 0, sizeof xt_);                                                              \
        for (int r = 0; r < R; r++) {                                                            \
            memcpy(wt_[r], ROW(r) + b * WBS, (size_t)m * WBS);                                   \
            wb_[r] = (const char *)wt_[r];                                                       \
        }                                                                                        \
        for (int c = 0; c < C; c++) {                                                            \
            memcpy(xt_[c], (const hr_block_q8_0 *)(X + c * xs) + b, (size_t)m * sizeof(hr_block_q8_0)); \
            xb_[c] = xt_[c];                                                                     \
        }                                                                                        \
        QGRP_STEP(wb_, wb_, PFX, xb_, IDOT, Q4, 0, R, C)                                         \
    }                                                                                            \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                          \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                      \
            y[c * ys + r] = hsum8(_mm256_add_ps(acc0[r][c], acc1[r][c]));

#define QDOT_FUNCS(NAME, WBLK, IDOT, Q4)                                                          \
    enum { WBS_##NAME = sizeof(WBLK) };                                                           \
    static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {                    \
        const char *W = w, *X = x;                                                                 \
        const size_t ws = 0, xs = 0, ys = 0, WBS = WBS_##NAME;                                     \
        float *y = s;                                                                              \
        QDOT_BODY(WBLK, IDOT, Q4, 1, 1)                                                            \
    }                                                                                              \
    static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,         \
                            float *y, size_t ys) {                                                 \
        const char *W = w, *X = x;                                                                 \
        const size_t WBS = WBS_##NAME;                                                             \
        QDOT_BODY(WBLK, IDOT, Q4, HR_TILE_R, HR_TILE_C)                                            \
    }                                                                                              \
    static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,        \
                             float *y, size_t ys) {                                                \
        const char *W = w, *X = x;                                                                 \
        const size_t WBS = WBS_##NAME;                                                             \
        (void)xs;                                                                                  \
        QDOT_BODY(WBLK, IDOT, Q4, 2, 1)                                                            \
    }                                                                                              \
    static void rows4_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,        \
                             float *y, size_t ys) {                                                \
        const char *W = w, *X = x;                                                                 \
        const size_t WBS = WBS_##NAME;                                                             \
        (void)xs;                                                                                  \
        QDOT_BODY(WBLK, IDOT, Q4, 4, 1)                                                            \
    }                                                                                              \
    static void gather4_##NAME(int64_t n, const void *const *wr, const void *const *nx,           \
                               const void *x, float *y) {                                          \
        const char *X = x;                                                                         \
        const size_t xs = 0, ys = 0, WBS = WBS_##NAME;                                             \
        QDOT_BODY_AT(WBLK, IDOT, Q4, 4, 1, QROW_GATHER, QPROW_GATHER, QPF_GATHER)                  \
    }

QDOT_FUNCS(q8_0, hr_block_q8_0, w_idot_q8_0, 0)
QDOT_FUNCS(q4_0, hr_block_q4_0, w_idot_q4_0, 1)
/* ---- Q4_0 and Q8_0 prompt tiles over activations re-laid once per batch (tile_x) ----
 * Per 8 blocks, what x_grp and w_idot_* compute for every weight row, stored once
 * (hr_lanes_x256, lanes_avx2.h; Q8_0's AVX2 tile ignores its -c * sum(x)). */
#if !defined(HR_AVXVNNI) /* one build for both tables: its integers are exact either way */
size_t hr_tile_xbytes_lanes_avx2(int64_t n) { return (size_t)((n / HR_QK + QGRP - 1) / QGRP) * sizeof(hr_lanes_x256); }

void hr_tile_xprep_lanes_avx2(const void *xq, void *xt, int64_t n, int c) {
    const hr_block_q8_0 *x = xq;
    hr_lanes_x256 *o = xt; /* 64-byte aligned: matmul's scratch rows */
    const int64_t nb = n / HR_QK;
    const __m256i kc = _mm256_set1_epi8((char)c);
    for (int64_t b = 0, gi = 0; b < nb; b += QGRP, gi++) {
        hr_block_q8_0 pad[QGRP];
        const hr_block_q8_0 *src = hr_q8_grp_src(x, b, nb, QGRP, pad);
        const __m256 d = scales8((const char *)&src[0].d, sizeof(hr_block_q8_0));
        for (int k = 0; k < 2; k++) {
            __m256i q[4], s = _mm256_setzero_si256();
            q8_lanes4(src + 4 * k, q);
            for (int i = 0; i < 4; i++) {
                _mm256_store_si256(&o[gi].q[k][i], q[i]);
                s = _mm256_add_epi32(s, dot4(kc, q[i])); /* c <= 128: maddubs' pairs stay below 2^15 */
            }
            _mm256_store_si256(&o[gi].nc[k], _mm256_sub_epi32(_mm256_setzero_si256(), s));
            _mm256_store_ps((float *)&o[gi].ds[k], _mm256_permutevar8x32_ps(d, sidx(k)));
        }
    }
}
#endif
static void tile_xprep_q4_0(const void *xq, void *xt, int64_t n) { hr_tile_xprep_lanes_avx2(xq, xt, n, 8); }
static void tile_xprep_q8_0(const void *xq, void *xt, int64_t n) { hr_tile_xprep_lanes_avx2(xq, xt, n, 128); }

/* The tile_x driver of Q4_0 and Q8_0: the tile's rows one after the other, groups of QGRP
 * blocks through tx_T_grp1, a ragged last group from zero-padded blocks (zero blocks add
 * exactly +0, as in QDOT_BODY), then the two chains' sum. With one token (C 1: rows4_x, decode
 * over the re-laid row) each row is a stream of its own, prefetching FPF_ONE on in itself into
 * L2, as the float rows4 do; a tile's rows prefetch PF_AHEAD on into L1. */
#define TILE_X_ROWS(T)                                                                                          \
    INLINE void tile_x_##T##_row(int64_t n, const char *W, const char *X, size_t xs, float *y, size_t ys,       \
                                 const int C) {                                                                 \
        const int64_t nb = n / HR_QK, nfull = nb / QGRP;                                                        \
        __m256 acc0[HR_TILE_C], acc1[HR_TILE_C];                                                                \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc0[c] = acc1[c] = _mm256_setzero_ps();           \
        for (int64_t gi = 0; gi < nfull; gi++) {                                                                \
            const char *wb = W + gi * QGRP * sizeof(hr_block_##T);                                              \
            for (int o = 0; o < QGRP * (int)sizeof(hr_block_##T); o += 64) {                                   \
                if (C == 1) _mm_prefetch(wb + FPF_ONE + o, _MM_HINT_T1);                                        \
                else _mm_prefetch(wb + PF_AHEAD + o, _MM_HINT_T0);                                              \
            }                                                                                                   \
            tx_##T##_grp1(wb, X, xs, gi, acc0, acc1, C);                                                        \
        }                                                                                                       \
        if (nfull * QGRP < nb) {                                                                                \
            hr_block_##T pad[QGRP];                                                                             \
            memset(pad, 0, sizeof pad);                                                                         \
            memcpy(pad, W + nfull * QGRP * sizeof(hr_block_##T), (size_t)(nb - nfull * QGRP) * sizeof pad[0]);  \
            tx_##T##_grp1((const char *)pad, X, xs, nfull, acc0, acc1, C);                                      \
        }                                                                                                       \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) y[c * ys] = hsum8(_mm256_add_ps(acc0[c], acc1[c])); \
    }                                                                                                           \
    static void tile_x_##T(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) { \
        for (int r = 0; r < HR_TILE_R; r++) tile_x_##T##_row(n, (const char *)w + r * ws, x, xs, y + r, ys, HR_TILE_C); \
    }                                                                                                           \
    static void rows4_x_##T(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) { \
        (void)xs, (void)ys;                                                                                     \
        for (int r = 0; r < 4; r++) tile_x_##T##_row(n, (const char *)w + r * ws, x, 0, y + r, 1, 1);           \
    }

/* One weight row's group (8 blocks at wb) against the tile's tokens, QGRP_STEP's operations per
 * token and step. The tile runs its two rows one after the other: 2 x 2 x 4 accumulators
 * spilled (a 2 x 4 version measured 14% faster than 1 x 4 on the first AVX2 machine; on the
 * Intel machine the 1 x 4 one is 3% faster on AVX2 and 7% with AVX-VNNI, bench_prompt q4_0). */
INLINE void tx_q4_0_grp1(const char *wb, const char *X, size_t xs, int64_t gi, __m256 *acc0, __m256 *acc1, const int C) {
    const __m256i m = _mm256_set1_epi8(0x0f);
    const __m256 dw = scales8(wb, sizeof(hr_block_q4_0));
    _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {
        const hr_block_q4_0 *B = (const hr_block_q4_0 *)wb + 4 * k;
        const __m256i v0 = two128(B[0].qs, B[1].qs), v1 = two128(B[2].qs, B[3].qs);
        const __m256i na = _mm256_unpacklo_epi64(v0, v1), nb = _mm256_unpackhi_epi64(v0, v1);
        const __m256i u[4] = {_mm256_and_si256(na, m), _mm256_and_si256(_mm256_srli_epi16(na, 4), m),
                              _mm256_and_si256(nb, m), _mm256_and_si256(_mm256_srli_epi16(nb, 4), m)};
        const __m256 wd = _mm256_permutevar8x32_ps(dw, sidx(k));
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {
            const hr_lanes_x256 *g = (const hr_lanes_x256 *)(X + c * xs) + gi;
            const __m256 t = _mm256_cvtepi32_ps(dot4x4_from(g->nc[k], u, g->q[k]));
            const __m256 sk = _mm256_mul_ps(wd, g->ds[k]);
            if (k & 1) acc1[c] = _mm256_fmadd_ps(t, sk, acc1[c]);
            else acc0[c] = _mm256_fmadd_ps(t, sk, acc0[c]);
        }
    }
}
TILE_X_ROWS(q4_0)


/* ---- Q8_0 prompt tiles (tile_x over hr_lanes_x256) ----
 * The tile lays each weight row's blocks out once for its tokens: AVX-VNNI as w ^ 0x80 =
 * w + 128, unsigned, with the lane starting at -128 * sum(x) (no per-(row, token) sign work:
 * the same integer); AVX2 as |w|, x taking w's sign per token (its int16 pair sums of
 * (w + 128) x would overflow). */
/* The group of 8 weight blocks at wb (one row) against the tile's tokens: per token and step
 * the lanes of QGRP_STEP with w_idot_q8_0, into acc0 (step 0) and acc1 (step 1). */
INLINE void tx_q8_0_grp1(const char *wb, const char *X, size_t xs, int64_t gi, __m256 *acc0, __m256 *acc1, const int C) {
    const __m256 dw = scales8(wb, sizeof(hr_block_q8_0));
    _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++) {
        __m256i v[4];
        q8_lanes4((const hr_block_q8_0 *)wb + 4 * k, v);
#if defined(HR_AVXVNNI)
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) v[i] = _mm256_xor_si256(v[i], _mm256_set1_epi8((char)0x80));
#else
        __m256i a[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) a[i] = _mm256_sign_epi8(v[i], v[i]);
#endif
        const __m256 wd = _mm256_permutevar8x32_ps(dw, sidx(k));
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {
            const hr_lanes_x256 *g = (const hr_lanes_x256 *)(X + c * xs) + gi;
#if defined(HR_AVXVNNI)
            const __m256i t = dot4x4_from(g->nc[k], v, g->q[k]);
#else
            __m256i d[4];
            _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) d[i] = dot4(a[i], _mm256_sign_epi8(g->q[k][i], v[i]));
            const __m256i t = _mm256_add_epi32(_mm256_add_epi32(d[0], d[1]), _mm256_add_epi32(d[2], d[3]));
#endif
            const __m256 sk = _mm256_mul_ps(wd, g->ds[k]);
            if (k & 1) acc1[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), sk, acc1[c]);
            else acc0[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), sk, acc0[c]);
        }
    }
}

/* Q8_0's tile runs its rows one after the other: 2 chains x 4 tokens of accumulators stay in
 * registers, where 2 rows' 16 spilled. */
TILE_X_ROWS(q8_0)


/* K-quant prompts as panels (kquant_k_avx2.c; the AVX-VNNI build's names map through
 * kquant_avxvnni_names.h), IQ4_XS's too with vpdpbusd. tile16_min: the batches from which the
 * panels beat tile_x (Q4_K, Q5_K, IQ4_XS: 16 tokens) or the other K-quants' plain tiles (8). */
#if defined(HR_AVXVNNI)
#define K_TILE16_IQ4 [HR_IQ4_XS] = hr_tile16_iq4_xs_avx2,
#define K_TILE16_MIN_IQ4 [HR_IQ4_XS] = 16,
#else
#define K_TILE16_IQ4
#define K_TILE16_MIN_IQ4
#endif
#define K_TILE16                                                                                              \
    .tile16 = {K_TILE16_IQ4[HR_Q4_K] = hr_tile16_q4_K_avx2, [HR_Q5_K] = hr_tile16_q5_K_avx2,                  \
               [HR_Q6_K] = hr_tile16_q6_K_avx2, [HR_Q3_K] = hr_tile16_q3_K_avx2, [HR_Q2_K] = hr_tile16_q2_K_avx2}, \
    .tile16_prep = {HR_KQ_PREP(hr_tile16_prep_q8K_avx2)},                                                      \
    .tile16_bytes = {HR_KQ_PREP(hr_tile16_bytes_q8K_avx2)},                                                    \
    .tile16_min = {K_TILE16_MIN_IQ4[HR_Q4_K] = 16, [HR_Q5_K] = 16, [HR_Q6_K] = 8, [HR_Q3_K] = 8, [HR_Q2_K] = 8},
static const hr_kernels_ext k_avx2 = {
    .k = {
        .name = K_TABLE_NAME,
        .attn_wsum = hr_attn_wsum_avx2,
        .attn_wsum_grp = hr_attn_wsum_grp_avx2,
        .vec_dot = {[HR_F32] = dot_f32, [HR_F16] = dot_f16, [HR_BF16] = dot_bf16,
                    [HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0,
                    HR_KQ_ENTRIES(dot, avx2),
                    HR_KQL_ENTRIES(dot, avx2)},
        .act_prep = {[HR_F32] = prep_f32, [HR_F16] = hr_prep_f16_avx2, [HR_BF16] = hr_prep_bf16_avx2,
                     [HR_Q8_0] = hr_prep_q8_0_avx2, [HR_Q4_0] = hr_prep_q8_0_avx2,
                     HR_KQ_PREP(hr_prep_q8_K_avx2), HR_KQL_PREPS},
    },
    .tile = {[HR_F32] = tile_f32, [HR_F16] = tile_f16, [HR_BF16] = tile_bf16,
             [HR_Q8_0] = tile_q8_0, [HR_Q4_0] = tile_q4_0,
             HR_KQ_ENTRIES(tile, avx2),
             HR_KQL_ENTRIES(tile, avx2)},
    .rows2 = {[HR_F32] = rows2_f32, [HR_F16] = rows2_f16, [HR_BF16] = rows2_bf16,
              [HR_Q8_0] = rows2_q8_0, [HR_Q4_0] = rows2_q4_0,
              HR_KQL_ENTRIES(rows2, avx2)},
    .gather4 = {[HR_F32] = gather4_f32, [HR_F16] = gather4_f16, [HR_BF16] = gather4_bf16,
                [HR_Q8_0] = gather4_q8_0, [HR_Q4_0] = gather4_q4_0, HR_KQ_ENTRIES(gather4, avx2)},
    .rows4 = {[HR_F32] = rows4_f32, [HR_F16] = rows4_f16, [HR_BF16] = rows4_bf16,
              [HR_Q8_0] = rows4_q8_0, [HR_Q4_0] = rows4_q4_0,
              HR_KQ_ENTRIES(rows4, avx2),
              HR_KQL_ENTRIES(rows4, avx2)},
    .rows4_x = {[HR_Q8_0] = rows4_x_q8_0, [HR_Q4_0] = rows4_x_q4_0, [HR_BF16] = rows4_x_bf16,
                HR_KQLX2_ENTRIES(rows4_x)},
    .tile_x = {[HR_Q8_0] = tile_x_q8_0, [HR_Q4_0] = tile_x_q4_0, [HR_BF16] = tile_x_bf16,
               HR_KQX_ENTRIES(tile_x, avx2), HR_KQLX2_ENTRIES(tile_x)},
    .tile_xw = {[HR_IQ4_XS] = hr_tile_xw_iq4_xs_avx2},
    .xw_rows = {[HR_IQ4_XS] = 2},
    .xw_cols = {[HR_IQ4_XS] = 8},
    .tile_xprep = {[HR_Q8_0] = tile_xprep_q8_0, [HR_Q4_0] = tile_xprep_q4_0, [HR_BF16] = tile_xprep_bf16,
                   HR_KQX_ENTRIES(tile_xprep, avx2),
                   HR_KQLX2_ENTRIES(tile_xprep)},
    .tile_xbytes = {[HR_Q8_0] = hr_tile_xbytes_lanes_avx2, [HR_Q4_0] = hr_tile_xbytes_lanes_avx2, [HR_BF16] = tile_xbytes_f32,
                    HR_KQX_BYTES(avx2),
                    HR_KQLX2_BYTES(hr_tile_xbytes_lanes_avx2)},
    K_TILE16
};

const hr_kernels_ext *K_TABLE_FN(void) { return &k_avx2; }
#else
const hr_kernels_ext *K_TABLE_FN(void) { return NULL; }
#endif
