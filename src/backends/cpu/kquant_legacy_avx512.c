/* AVX-512 (F/BW/VL/DQ + VNNI) kernels of Q4_1, Q5_1 (against Q8_1), Q5_0, IQ4_NL and
 * MXFP4 (against Q8_0). Two blocks per step: each block's 32 weight values unpacked to
 * bytes in element order (as the AVX2 file does), the pair's integer dot with vpdpbusd
 * (exact; signed weights move their sign onto x), its 16 int32 lanes scaled by d_w * d_x
 * of their block into one of two float accumulators (alternating by pair); an odd last
 * block pairs with zeros (adds exactly +0). Q4_1/Q5_1 add m * s per block to a scalar
 * sum. The per-(row, token) sequence is the same whatever R and C are, so vec_dot, rows4
 * and tiles agree bit for bit. Activation preps are AVX2's. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#include <string.h>

#include "kquant_legacy_simd.h"

#define TGT __attribute__((target("avx512vnni")))
#define INLINE static inline __attribute__((always_inline)) TGT

INLINE float h2f(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* ---- weight blocks to 32 bytes in element order ---- */
INLINE __m256i nib32(const uint8_t *qs) { /* low nibbles are elements 0-15, high 16-31 */
    const __m128i m4 = _mm_set1_epi8(0x0f), v = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}
INLINE __m256i bit5(const uint8_t qh[4]) { /* byte j = 0x10 where bit j of qh is set */
    uint32_t h;
    memcpy(&h, qh, 4);
    const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), spread), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}
INLINE __m256i lut16(const int8_t *tab) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tab));
}

/* Per type: unpack block b of the row at w to bytes q, its scale d and min m. SIGNED
 * types give int8 values, the others (with a min) uint8. */
INLINE void up_q4_1(const char *w, int64_t b, __m256i *q, float *d, float *m) {
    const hr_block_q4_1 *B = (const hr_block_q4_1 *)w + b;
    *q = nib32(B->qs), *d = h2f(&B->d), *m = h2f(&B->m);
}
INLINE void up_q5_1(const char *w, int64_t b, __m256i *q, float *d, float *m) {
    const hr_block_q5_1 *B = (const hr_block_q5_1 *)w + b;
    *q = _mm256_or_si256(nib32(B->qs), bit5(B->qh)), *d = h2f(&B->d), *m = h2f(&B->m);
}
INLINE void up_q5_0(const char *w, int64_t b, __m256i *q, float *d, float *m) {
    const hr_block_q5_0 *B = (const hr_block_q5_0 *)w + b;
    *q = _mm256_sub_epi8(_mm256_or_si256(nib32(B->qs), bit5(B->qh)), _mm256_set1_epi8(16));
    *d = h2f(&B->d), *m = 0;
}
INLINE void up_iq4_nl(const char *w, int64_t b, __m256i *q, float *d, float *m) {
    const hr_block_iq4_nl *B = (const hr_block_iq4_nl *)w + b;
    *q = _mm256_shuffle_epi8(lut16(hr_kvalues_iq4nl), nib32(B->qs)), *d = h2f(&B->d), *m = 0;
}
INLINE void up_mxfp4(const char *w, int64_t b, __m256i *q, float *d, float *m) {
    const hr_block_mxfp4 *B = (const hr_block_mxfp4 *)w + b;
    *q = _mm256_shuffle_epi8(lut16(hr_kvalues_mxfp4), nib32(B->qs)), *d = hr_e8m0_to_f32_half(B->e), *m = 0;
}

INLINE __m512i cat2(__m256i a, __m256i b) { return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1); }
INLINE __m512 cat2f(float a, float b) { return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1); }

/* exact int32 lanes of sum(w * x) over each 4 bytes: w signed (sign moved onto x) or unsigned */
INLINE __m512i idot(__m512i w, __m512i x, int sgn) {
    if (!sgn) return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x);
    __m512i sx = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), sx);
}

#define PF_AHEAD 1536

/* R weight rows (stride ws) x C activation rows (stride xs) -> y[c * ys + r]. */
#define LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, R, C)                                             \
    __m512 acc[2][R][C];                                                                       \
    float ms[R][C];                                                                            \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                  \
        acc[0][r][c] = acc[1][r][c] = _mm512_setzero_ps();                                     \
        ms[r][c] = 0.0f;                                                                       \
    }                                                                                          \
    const int64_t nb = n / HR_QK;                                                              \
    for (int64_t b = 0; b < nb; b += 2) {                                                      \
        const int two = b + 1 < nb;                                                            \
        __m512i wq[R];                                                                         \
        float dw[R][2], mw[R][2];                                                              \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                  \
            const char *row = W + r * ws;                                                      \
            _mm_prefetch(row + b * sizeof(WBLK) + ((R) == 4 ? 4 * ws : PF_AHEAD), _MM_HINT_T0); \
            __m256i q0, q1 = _mm256_setzero_si256();                                           \
            UP(row, b, &q0, &dw[r][0], &mw[r][0]);                                             \
            dw[r][1] = mw[r][1] = 0.0f;                                                        \
            if (two) UP(row, b + 1, &q1, &dw[r][1], &mw[r][1]);                                \
            wq[r] = cat2(q0, q1);                                                              \
        }                                                                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                  \
            const XBLK *xb = (const XBLK *)(X + c * xs) + b;                                   \
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)xb[0].qs);                  \
            const __m256i x1 = two ? _mm256_loadu_si256((const __m256i *)xb[1].qs) : _mm256_setzero_si256(); \
            const __m512i xv = cat2(x0, x1);                                                   \
            const float dx0 = h2f(&xb[0].d), dx1 = two ? h2f(&xb[1].d) : 0.0f;                 \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                              \
                __m512 v = _mm512_cvtepi32_ps(idot(wq[r], xv, SGN));                           \
                __m512 sc = cat2f(dw[r][0] * dx0, dw[r][1] * dx1);                             \
                acc[(b >> 1) & 1][r][c] = _mm512_fmadd_ps(v, sc, acc[(b >> 1) & 1][r][c]);     \
                if (HASMIN) {                                                                  \
                    ms[r][c] += mw[r][0] * h2f((const char *)&xb[0] + 2);                      \
                    if (two) ms[r][c] += mw[r][1] * h2f((const char *)&xb[1] + 2);             \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                    \
            y[c * ys + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[0][r][c], acc[1][r][c])) + ms[r][c];

#define LDOT_FUNCS(NAME, WBLK, XBLK, UP, SGN, HASMIN)                                            \
    TGT void hr_dot_##NAME##_avx512(int64_t n, float *s, const void *w, const void *x) {        \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, 1, 1)                                            \
    }                                                                                           \
    TGT void hr_tile_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                     float *y, size_t ys) {                                     \
        const char *W = w, *X = x;                                                              \
        LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, HR_TILE_R, HR_TILE_C)                            \
    }                                                                                           \
    TGT void hr_rows4_##NAME##_avx512(int64_t n, const void *w, size_t ws, const void *x, size_t xs, \
                                      float *y, size_t ys) {                                    \
        const char *W = w, *X = x;                                                              \
        (void)xs;                                                                               \
        LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, 4, 1)                                            \
    }

LDOT_FUNCS(q4_1, hr_block_q4_1, hr_block_q8_1, up_q4_1, 0, 1)
LDOT_FUNCS(q5_1, hr_block_q5_1, hr_block_q8_1, up_q5_1, 0, 1)
LDOT_FUNCS(q5_0, hr_block_q5_0, hr_block_q8_0, up_q5_0, 1, 0)
LDOT_FUNCS(iq4_nl, hr_block_iq4_nl, hr_block_q8_0, up_iq4_nl, 1, 0)
LDOT_FUNCS(mxfp4, hr_block_mxfp4, hr_block_q8_0, up_mxfp4, 1, 0)
#endif
