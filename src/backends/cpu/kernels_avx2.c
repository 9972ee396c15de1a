/* AVX2 + FMA + F16C kernels. Each output of a tile uses exactly the arithmetic of
 * vec_dot for that pair, so decode and prompt results agree bit for bit. Float
 * types: 16 elements per step as t = w0*x0; t = fma(w1, x1, t); acc += t (short
 * dependency chain on acc), an 8-wide step, then a scalar tail for odd lengths.
 * Quantized types: integer dot per block (exact), converted to 8 float lanes,
 * scaled by d_w*d_x and accumulated in pairs of blocks the same way. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

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
#define FDOT_BODY(LD, SC, R, C)                                                              \
    __m256 acc[R][C];                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps(); \
    int64_t i = 0;                                                                           \
    for (; i + 16 <= n; i += 16) {                                                           \
        __m256 x0[C], x1[C];                                                                 \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
            x0[c] = LD(X + c * xs, i);                                                       \
            x1[c] = LD(X + c * xs, i + 8);                                                   \
        }                                                                                    \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            __m256 w0 = LD(W + r * ws, i), w1 = LD(W + r * ws, i + 8);                       \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
                __m256 t = _mm256_mul_ps(w0, x0[c]);                                         \
                t = _mm256_fmadd_ps(w1, x1[c], t);                                           \
                acc[r][c] = _mm256_add_ps(acc[r][c], t);                                     \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    if (i + 8 <= n) {                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                \
            __m256 w0 = LD(W + r * ws, i);                                                   \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                              \
                acc[r][c] = _mm256_fmadd_ps(w0, LD(X + c * xs, i), acc[r][c]);               \
        }                                                                                    \
        i += 8;                                                                              \
    }                                                                                        \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                \
        float tail = 0.0f;                                                                   \
        for (int64_t j = i; j < n; j++) tail += SC(W + r * ws, j) * SC(X + c * xs, j);       \
        y[c * ys + r] = hsum8(acc[r][c]) + tail;                                             \
    }

#define FDOT_FUNCS(NAME, LD, SC)                                                          \
    static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {            \
        const char *W = w, *X = x;                                                         \
        const size_t ws = 0, xs = 0, ys = 0;                                               \
        float *y = s;                                                                      \
        FDOT_BODY(LD, SC, 1, 1)                                                            \
    }                                                                                      \
    static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                            float *y, size_t ys) {                                         \
        const char *W = w, *X = x;                                                         \
        FDOT_BODY(LD, SC, HR_TILE_R, HR_TILE_C)                                            \
    }                                                                                      \
    static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                             float *y, size_t ys) {                                        \
        const char *W = w, *X = x;                                                         \
        FDOT_BODY(LD, SC, 2, 1)                                                            \
    }

FDOT_FUNCS(f32, ld_f32, sc_f32)
FDOT_FUNCS(f16, ld_f16, sc_f16)
FDOT_FUNCS(bf16, ld_bf16, sc_bf16)

/* ---- activation prep ---- */
static void prep_f32(const float *x, void *xq, int64_t n) { memcpy(xq, x, (size_t)n * 4); }

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

/* ---- quantized types ---- */
INLINE __m256 half_bcast(uint16_t h) { return _mm256_cvtph_ps(_mm_set1_epi16((short)h)); }

/* Signed bytes of block b of a weight row. */
INLINE __m256i wq_q8_0(const void *w, int64_t b) {
    return _mm256_loadu_si256((const __m256i *)((const hr_block_q8_0 *)w)[b].qs);
}
INLINE uint16_t wd_q8_0(const void *w, int64_t b) { return ((const hr_block_q8_0 *)w)[b].d; }
INLINE __m256i wq_q4_0(const void *w, int64_t b) {
    __m128i t = _mm_loadu_si128((const __m128i *)((const hr_block_q4_0 *)w)[b].qs);
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    return _mm256_sub_epi8(_mm256_and_si256(v, _mm256_set1_epi8(0x0f)), _mm256_set1_epi8(8));
}
INLINE uint16_t wd_q4_0(const void *w, int64_t b) { return ((const hr_block_q4_0 *)w)[b].d; }

/* 8 lanes of int32 partial sums of |w|*sign(x, w) = w*x, as float. */
INLINE __m256 idot(__m256i aw, __m256i w, __m256i x) {
    __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

#define QDOT_BODY(WQ, WD, R, C)                                                          \
    const hr_block_q8_0 *xb[C];                                                          \
    __m256 acc[R][C];                                                                    \
    _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) xb[c] = (const hr_block_q8_0 *)(X + c * xs); \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                  \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps(); \
    const int64_t nb = n / HR_QK;                                                        \
    int64_t b = 0;                                                                       \
    for (; b + 2 <= nb; b += 2) {                                                        \
        __m256i x0[C], x1[C];                                                            \
        __m256 dx0[C], dx1[C];                                                           \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                            \
            x0[c] = _mm256_loadu_si256((const __m256i *)xb[c][b].qs);                    \
            x1[c] = _mm256_loadu_si256((const __m256i *)xb[c][b + 1].qs);                \
            dx0[c] = half_bcast(xb[c][b].d);                                             \
            dx1[c] = half_bcast(xb[c][b + 1].d);                                         \
        }                                                                                \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                            \
            const void *wr = W + r * ws;                                                 \
            __m256i w0 = WQ(wr, b), w1 = WQ(wr, b + 1);                                  \
            __m256i a0 = _mm256_sign_epi8(w0, w0), a1 = _mm256_sign_epi8(w1, w1);        \
            __m256 dw0 = half_bcast(WD(wr, b)), dw1 = half_bcast(WD(wr, b + 1));         \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                        \
                __m256 t = _mm256_mul_ps(_mm256_mul_ps(dw0, dx0[c]), idot(a0, w0, x0[c])); \
                t = _mm256_fmadd_ps(_mm256_mul_ps(dw1, dx1[c]), idot(a1, w1, x1[c]), t); \
                acc[r][c] = _mm256_add_ps(acc[r][c], t);                                 \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    if (b < nb) {                                                                        \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                            \
            const void *wr = W + r * ws;                                                 \
            __m256i w0 = WQ(wr, b), a0 = _mm256_sign_epi8(w0, w0);                       \
            __m256 dw0 = half_bcast(WD(wr, b));                                          \
            _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                        \
                __m256i xv = _mm256_loadu_si256((const __m256i *)xb[c][b].qs);           \
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dw0, half_bcast(xb[c][b].d)),  \
                                            idot(a0, w0, xv), acc[r][c]);                \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                  \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) y[c * ys + r] = hsum8(acc[r][c]);

#define QDOT_FUNCS(NAME, WQ, WD)                                                          \
    static void dot_##NAME(int64_t n, float *s, const void *w, const void *x) {            \
        const char *W = w, *X = x;                                                         \
        const size_t ws = 0, xs = 0, ys = 0;                                               \
        float *y = s;                                                                      \
        QDOT_BODY(WQ, WD, 1, 1)                                                            \
    }                                                                                      \
    static void tile_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                            float *y, size_t ys) {                                         \
        const char *W = w, *X = x;                                                         \
        QDOT_BODY(WQ, WD, HR_TILE_R, HR_TILE_C)                                            \
    }                                                                                      \
    static void rows2_##NAME(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                             float *y, size_t ys) {                                        \
        const char *W = w, *X = x;                                                         \
        QDOT_BODY(WQ, WD, 2, 1)                                                            \
    }

QDOT_FUNCS(q8_0, wq_q8_0, wd_q8_0)
QDOT_FUNCS(q4_0, wq_q4_0, wd_q4_0)

static const hr_kernels_ext k_avx2 = {
    .k = {
        .name = "avx2",
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

const hr_kernels_ext *hr_kext_avx2(void) { return &k_avx2; }
#else
const hr_kernels_ext *hr_kext_avx2(void) { return NULL; }
#endif
