/* AVX-512 (F/BW/VL/DQ + VNNI) kernels. Quantized types hold two blocks per 512-bit
 * register (lanes 0-7 block b, 8-15 block b+1): integer dot per block with vpdpbusd
 * (exact), converted to float, scaled by d_w*d_x; four blocks per step accumulate as
 * t = d0*q0; t = fma(d1, q1, t); acc += t. Float types: 32 elements per step the same
 * way, a 16-wide step, a scalar tail. Tiles repeat vec_dot's arithmetic per pair, so
 * they agree with it bit for bit. Activation preps are the AVX2 ones. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512vnni")))
#define INLINE static inline __attribute__((always_inline)) TGT

/* ---- float types ---- */
INLINE __m512 ld_f32(const void *p, int64_t i) { return _mm512_loadu_ps((const float *)p + i); }
INLINE __m512 ld_f16(const void *p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
}
INLINE __m512 ld_bf16(const void *p, int64_t i) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
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

#define FDOT_BODY(LD, SC, R, C)                                                              \
    __m512 acc[R][C];                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps(); \
    int64_t i = 0;                                                                           \
    for (; i + 32 <= n; i += 32) {                                                           \
        __m512 w0[R], w1[R];                                                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            w0[r] = LD(W + r * ws, i);                                                       \
            w1[r] = LD(W + r * ws, i + 16);                                                  \
        }                                                                                    \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
            __m512 x0 = LD(X + c * xs, i), x1 = LD(X + c * xs, i + 16);                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                            \
                __m512 t = _mm512_mul_ps(w0[r], x0);                                         \
                t = _mm512_fmadd_ps(w1[r], x1, t);                                           \
                acc[r][c] = _mm512_add_ps(acc[r][c], t);                                     \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    if (i + 16 <= n) {                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            __m512 w0 = LD(W + r * ws, i);                                                   \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                              \
                acc[r][c] = _mm512_fmadd_ps(w0, LD(X + c * xs, i), acc[r][c]);               \
        }                                                                                    \
        i += 16;                                                                             \
    }                                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
        float tail = 0.0f;                                                                   \
        for (int64_t j = i; j < n; j++) tail += SC(W + r * ws, j) * SC(X + c * xs, j);       \
        y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]) + tail;                              \
    }

#define FDOT_FUNCS(NAME, LD, SC)                                                               \
    TGT static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {             \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        FDOT_BODY(LD, SC, 1, 1)                                                                 \
    }                                                                                           \
    TGT static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,  \
                                float *y, size_t ys) {                                          \
        const char *W = w, *X = x;                                                              \
        FDOT_BODY(LD, SC, HR_TILE_R, HR_TILE_C)                                                 \
    }                                                                                           \
    TGT static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                 float *y, size_t ys) {                                         \
        const char *W = w, *X = x;                                                              \
        FDOT_BODY(LD, SC, 2, 1)                                                                 \
    }

FDOT_FUNCS(f32, ld_f32, sc_f32)
FDOT_FUNCS(f16, ld_f16, sc_f16)
FDOT_FUNCS(bf16, ld_bf16, sc_bf16)

static void prep_f32(const float *x, void *xq, int64_t n) { memcpy(xq, x, (size_t)n * 4); }

/* ---- quantized types: pairs of blocks; `has1` = 0 makes the second block zero ---- */
INLINE __m512i pair256(const int8_t *a, const int8_t *b, int has1) {
    __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a));
    return _mm512_inserti64x4(v, has1 ? _mm256_loadu_si256((const __m256i *)b) : _mm256_setzero_si256(), 1);
}
INLINE __m512 half_pair(uint16_t a, uint16_t b) {
    __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16((short)a)), _mm_set1_epi16((short)b), 1);
    return _mm512_cvtph_ps(h);
}

/* Activation pair: bytes, scales, and (Q4_0) -8 * sum(x) per lane. */
typedef struct { __m512i q; __m512 d; __m512i neg8; } xpair;
INLINE xpair x_pair(const hr_block_q8_0 *x, int64_t b, int has1, int want_neg8) {
    xpair p;
    p.q = pair256(x[b].qs, has1 ? x[b + 1].qs : NULL, has1);
    p.d = half_pair(x[b].d, has1 ? x[b + 1].d : 0);
    p.neg8 = want_neg8 ? _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), p.q))
                       : _mm512_setzero_si512();
    return p;
}

/* Weight pair: what the integer dot needs plus the scales. Q8_0: |w| and sign mask;
 * Q4_0: the unsigned nibbles (0..15) laid out like the activation pair. */
typedef struct { __m512i q; __mmask64 neg; __m512 d; } wpair;
INLINE wpair w_pair_q8_0(const void *w, int64_t b, int has1) {
    const hr_block_q8_0 *B = w;
    wpair p;
    __m512i v = pair256(B[b].qs, has1 ? B[b + 1].qs : NULL, has1);
    p.q = _mm512_abs_epi8(v);
    p.neg = _mm512_movepi8_mask(v);
    p.d = half_pair(B[b].d, has1 ? B[b + 1].d : 0);
    return p;
}
INLINE wpair w_pair_q4_0(const void *w, int64_t b, int has1) {
    const hr_block_q4_0 *B = w;
    wpair p;
    __m128i lo = _mm_loadu_si128((const __m128i *)B[b].qs);
    __m128i hi = has1 ? _mm_loadu_si128((const __m128i *)B[b + 1].qs) : _mm_set1_epi8(0x08 | 0x80);
    __m256i y = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(y), _mm256_srli_epi16(y, 4), 1);
    z = _mm512_and_si512(z, _mm512_set1_epi8(0x0f));
    p.q = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
    p.neg = 0;
    p.d = half_pair(B[b].d, has1 ? B[b + 1].d : 0);
    return p;
}
/* sum over each 4-byte group of w*x, 16 int32 lanes, as float */
INLINE __m512 idot_q8_0(wpair w, xpair x) {
    __m512i sx = _mm512_mask_sub_epi8(x.q, w.neg, _mm512_setzero_si512(), x.q);
    return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w.q, sx));
}
INLINE __m512 idot_q4_0(wpair w, xpair x) {
    return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(x.neg8, w.q, x.q));
}

#define QDOT_BODY(WP, IDOT, NEG8, R, C)                                                     \
    const hr_block_q8_0 *xb[C];                                                             \
    __m512 acc[R][C];                                                                       \
    _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xb[c] = (const hr_block_q8_0 *)(X + c * xs); \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                     \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm512_setzero_ps(); \
    const int64_t nb = n / HR_QK;                                                           \
    int64_t b = 0;                                                                          \
    for (; b + 4 <= nb; b += 4) {                                                           \
        wpair wa[R], wb[R];                                                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                               \
            wa[r] = WP(W + r * ws, b, 1);                                                   \
            wb[r] = WP(W + r * ws, b + 2, 1);                                               \
        }                                                                                   \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                               \
            xpair xa = x_pair(xb[c], b, 1, NEG8), xbb = x_pair(xb[c], b + 2, 1, NEG8);      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                           \
                __m512 t = _mm512_mul_ps(_mm512_mul_ps(wa[r].d, xa.d), IDOT(wa[r], xa));    \
                t = _mm512_fmadd_ps(_mm512_mul_ps(wb[r].d, xbb.d), IDOT(wb[r], xbb), t);    \
                acc[r][c] = _mm512_add_ps(acc[r][c], t);                                    \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    for (; b < nb; b += 2) {                                                                \
        const int has1 = b + 1 < nb;                                                        \
        wpair wa[R];                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) wa[r] = WP(W + r * ws, b, has1); \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                               \
            xpair xa = x_pair(xb[c], b, has1, NEG8);                                        \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                             \
                acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(wa[r].d, xa.d), IDOT(wa[r], xa), acc[r][c]); \
        }                                                                                   \
    }                                                                                       \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                     \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) y[c * ys + r] = _mm512_reduce_add_ps(acc[r][c]);

#define QDOT_FUNCS(NAME, WP, IDOT, NEG8)                                                       \
    TGT static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {             \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        QDOT_BODY(WP, IDOT, NEG8, 1, 1)                                                         \
    }                                                                                           \
    TGT static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs,  \
                                float *y, size_t ys) {                                          \
        const char *W = w, *X = x;                                                              \
        QDOT_BODY(WP, IDOT, NEG8, HR_TILE_R, HR_TILE_C)                                         \
    }                                                                                           \
    TGT static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                 float *y, size_t ys) {                                         \
        const char *W = w, *X = x;                                                              \
        QDOT_BODY(WP, IDOT, NEG8, 2, 1)                                                         \
    }

QDOT_FUNCS(q8_0, w_pair_q8_0, idot_q8_0, 0)
QDOT_FUNCS(q4_0, w_pair_q4_0, idot_q4_0, 1)

static const hr_kernels_ext k_avx512 = {
    .k = {
        .name = "avx512",
        .vec_dot = {[HR_F32] = dot_f32, [HR_F16] = dot_f16, [HR_BF16] = dot_bf16,
                    [HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0},
        .act_prep = {[HR_F32] = prep_f32, [HR_F16] = hr_prep_f16_avx2, [HR_BF16] = hr_prep_bf16_avx2,
                     [HR_Q8_0] = hr_prep_q8_0_avx2, [HR_Q4_0] = hr_prep_q8_0_avx2},
    },
    .tile = {[HR_F32] = tile_f32, [HR_F16] = tile_f16, [HR_BF16] = tile_bf16,
             [HR_Q8_0] = tile_q8_0, [HR_Q4_0] = tile_q4_0},
    .rows2 = {[HR_F32] = rows2_f32, [HR_F16] = rows2_f16, [HR_BF16] = rows2_bf16,
              [HR_Q8_0] = rows2_q8_0, [HR_Q4_0] = rows2_q4_0},
};

const hr_kernels_ext *hr_kext_avx512(void) { return &k_avx512; }
#else
const hr_kernels_ext *hr_kext_avx512(void) { return NULL; }
#endif
