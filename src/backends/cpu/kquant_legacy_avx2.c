/* AVX2 + FMA + F16C kernels of the 32-element weight types beyond Q8_0/Q4_0: Q4_1 and
 * Q5_1 (against Q8_1), Q5_0, IQ4_NL and MXFP4 (against Q8_0), and the Q8_1 activation
 * prep. Per block the weight's 32 values are unpacked to bytes in element order, the
 * integer dot with the activation bytes is exact (maddubs pairs fit int16: at most
 * 2 * 127 * 128), and its 8 int32 lanes are scaled by d_w * d_x into one of two float
 * accumulators (alternating by block, for latency); Q4_1/Q5_1 add m * s per block to a
 * scalar sum. The sequence of operations per (row, token) does not depend on how many
 * rows or tokens a call handles, so vec_dot, rows4 and tiles agree bit for bit. */
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
INLINE float h2f(const void *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* Same as hr_prep_q8_0_avx2 (ggml's x86 quantize_row_q8_1), plus s = F16(d * sum(q)) with
 * d the float amax/127 before its F16 rounding. */
void hr_prep_q8_1_avx2(const float *x, void *xq, int64_t n) {
    hr_block_q8_1 *y = xq;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const int rm = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
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
        __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), rm));
        __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), rm));
        __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), rm));
        __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), rm));
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

/* exact int32 lanes of sum(w * x): w signed (sign moved onto x) or unsigned */
INLINE __m256i idot(__m256i w, __m256i x, int sgn) {
    __m256i p = sgn ? _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)) : _mm256_maddubs_epi16(w, x);
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

#define PF_AHEAD 1536

/* R weight rows (stride ws) x C activation rows (stride xs) -> y[c * ys + r]. XBLK is the
 * activation block type (its d first, qs last); HASMIN adds m_w * s_x per block. */
#define LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, R, C)                                             \
    __m256 acc[2][R][C];                                                                       \
    float ms[R][C];                                                                            \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                  \
        acc[0][r][c] = acc[1][r][c] = _mm256_setzero_ps();                                     \
        ms[r][c] = 0.0f;                                                                       \
    }                                                                                          \
    const int64_t nb = n / HR_QK;                                                              \
    for (int64_t b = 0; b < nb; b++) {                                                         \
        __m256i wq[R];                                                                         \
        float dw[R], mw[R];                                                                    \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                  \
            const char *row = W + r * ws;                                                      \
            if ((b & 1) == 0)                                                                  \
                _mm_prefetch(row + b * sizeof(WBLK) + ((R) == 4 ? 4 * ws : PF_AHEAD), _MM_HINT_T0); \
            UP(row, b, &wq[r], &dw[r], &mw[r]);                                                \
        }                                                                                      \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++) {                                  \
            const XBLK *xb = (const XBLK *)(X + c * xs) + b;                                   \
            const __m256i xv = _mm256_loadu_si256((const __m256i *)xb->qs);                    \
            const float dx = h2f(&xb->d);                                                      \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                              \
                __m256 v = _mm256_cvtepi32_ps(idot(wq[r], xv, SGN));                           \
                acc[b & 1][r][c] = _mm256_fmadd_ps(v, _mm256_set1_ps(dw[r] * dx), acc[b & 1][r][c]); \
                if (HASMIN) ms[r][c] += mw[r] * h2f((const char *)xb + 2);                     \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                        \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                                    \
            y[c * ys + r] = hsum8(_mm256_add_ps(acc[0][r][c], acc[1][r][c])) + ms[r][c];

#define LDOT_FUNCS(NAME, WBLK, XBLK, UP, SGN, HASMIN)                                            \
    void hr_dot_##NAME##_avx2(int64_t n, float *s, const void *w, const void *x) {              \
        const char *W = w, *X = x;                                                              \
        const size_t ws = 0, xs = 0, ys = 0;                                                    \
        float *y = s;                                                                           \
        LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, 1, 1)                                            \
    }                                                                                           \
    void hr_tile_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs,   \
                               float *y, size_t ys) {                                           \
        const char *W = w, *X = x;                                                              \
        LDOT_BODY(WBLK, XBLK, UP, SGN, HASMIN, HR_TILE_R, HR_TILE_C)                            \
    }                                                                                           \
    void hr_rows4_##NAME##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs,  \
                                float *y, size_t ys) {                                          \
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
