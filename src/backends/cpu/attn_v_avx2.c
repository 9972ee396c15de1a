/* AVX2 + F16C twin of attn_v.c: 8 columns per register, up to 64 columns held in registers
 * while the value rows stream past, so each output element is loaded and stored once per
 * chunk of rows instead of once per row; per element the same multiply, then add, in row
 * order. Rows go in chunks that stay in L1 while each 64-column block takes its turn, so a
 * head's value rows are read from memory once, not once per block. */
#include "attn_v.h"

#if defined(HR_X86) && defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#include "formats/types.h"

static inline __attribute__((always_inline)) __m256 ld8(const char *row, int32_t d, int f16) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + d)));
    return _mm256_loadu_ps((const float *)row + d);
}

/* Columns [d0, d0 + 8K) over rows [p0, p1): K accumulators live over the rows (K a constant
 * after inlining), starting from 0 at row 0 and from out's partial sums after. */
static inline __attribute__((always_inline)) void wsum_block(float *out, const float *w, const char *V, size_t vs,
                                                             int32_t p0, int32_t p1, int32_t d0, int K, int f16) {
    __m256 acc[8];
    _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) acc[k] = p0 ? _mm256_loadu_ps(out + d0 + 8 * k) : _mm256_setzero_ps();
    for (int32_t p = p0; p < p1; p++) {
        const char *row = V + (size_t)p * vs;
        const __m256 wp = _mm256_set1_ps(w[p]);
        _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) acc[k] = _mm256_add_ps(acc[k], _mm256_mul_ps(wp, ld8(row, d0 + 8 * k, f16)));
    }
    _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) _mm256_storeu_ps(out + d0 + 8 * k, acc[k]);
}

/* f16 a constant after inlining, as the block's register loops are unrolled: left to the
 * compiler, the accumulators lived on the stack (attn_v_avx512.c) */
static inline __attribute__((always_inline)) void wsum_run(float *out, const float *w, const void *V, size_t vs,
                                                           int32_t n, int32_t hd, int f16) {
    enum { CHUNK = 32 }; /* rows: 32 of 128 F16 values are 8 KiB */
    int32_t d = 0;
    for (int32_t p0 = 0; p0 < n || p0 == 0; p0 += CHUNK) {
        const int32_t p1 = p0 + CHUNK < n ? p0 + CHUNK : n;
        for (d = 0; d + 64 <= hd; d += 64) wsum_block(out, w, V, vs, p0, p1, d, 8, f16);
        for (; d + 8 <= hd; d += 8) wsum_block(out, w, V, vs, p0, p1, d, 1, f16);
    }
    if (d < hd) { /* the last columns as the plain loop does them */
        const char *v = V;
        for (int32_t j = d; j < hd; j++) out[j] = 0.0f;
        for (int32_t p = 0; p < n; p++, v += vs)
            for (int32_t j = d; j < hd; j++)
                out[j] += w[p] * (f16 ? hr_f16_to_f32(((const uint16_t *)v)[j]) : ((const float *)v)[j]);
    }
}

void hr_attn_wsum_avx2(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16) {
    if (f16) wsum_run(out, w, V, vs, n, hd, 1);
    else wsum_run(out, w, V, vs, n, hd, 0);
}

void hr_attn_wsum_grp_avx2(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs,
                           const int32_t *n, int32_t hd, int f16) {
    for (int i = 0; i < HR_WSUM_GRP; i++) hr_attn_wsum_avx2(out + i * os, w + i * ws, V, vs, n[i], hd, f16);
}
#endif
