/* AVX-512 twin of attn_v.c: attn_v_avx2.c's scheme with 16 columns per register, so a
 * 128-wide head is one block of 8 accumulators and its value rows pass once. */
#include "attn_v.h"

#if defined(HR_X86) && defined(__AVX512F__)
#include <immintrin.h>
#include "formats/types.h"

static inline __m512 ld16(const char *row, int32_t d, int f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + d)));
    return _mm512_loadu_ps((const float *)row + d);
}

/* Columns [d0, d0 + 16K) over rows [p0, p1), from 0 at row 0 and from out's partial sums after. */
static inline __attribute__((always_inline)) void wsum_block(float *out, const float *w, const char *V, size_t vs,
                                                             int32_t p0, int32_t p1, int32_t d0, int K, int f16) {
    __m512 acc[8];
    for (int k = 0; k < K; k++) acc[k] = p0 ? _mm512_loadu_ps(out + d0 + 16 * k) : _mm512_setzero_ps();
    for (int32_t p = p0; p < p1; p++) {
        const char *row = V + (size_t)p * vs;
        const __m512 wp = _mm512_set1_ps(w[p]);
        for (int k = 0; k < K; k++) acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(wp, ld16(row, d0 + 16 * k, f16)));
    }
    for (int k = 0; k < K; k++) _mm512_storeu_ps(out + d0 + 16 * k, acc[k]);
}

void hr_attn_wsum_avx512(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16) {
    enum { CHUNK = 32 };
    int32_t d = 0;
    for (int32_t p0 = 0; p0 < n || p0 == 0; p0 += CHUNK) {
        const int32_t p1 = p0 + CHUNK < n ? p0 + CHUNK : n;
        for (d = 0; d + 128 <= hd; d += 128) wsum_block(out, w, V, vs, p0, p1, d, 8, f16);
        for (; d + 16 <= hd; d += 16) wsum_block(out, w, V, vs, p0, p1, d, 1, f16);
    }
    if (d < hd) hr_attn_wsum_c(out + d, w, (const char *)V + (size_t)d * (f16 ? 2 : 4), vs, n, hd - d, f16);
}
#endif
