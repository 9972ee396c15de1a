/* AVX-512 twin of attn_v.c: attn_v_avx2.c's scheme with 16 columns per register, so a
 * 128-wide head is one block of 8 accumulators and its value rows pass once. The loops over
 * a block's registers are unrolled and the value type fixed per call (UNROLL, the f16
 * constant): left to the compiler, the accumulators lived on the stack and each row's
 * products waited on a store and a reload, 3x slower per row. */
#include "attn_v.h"

#if defined(HR_X86) && defined(__AVX512F__)
#include <immintrin.h>
#include "formats/types.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

AI __m512 ld16(const char *row, int32_t d, int f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + d)));
    return _mm512_loadu_ps((const float *)row + d);
}

/* Columns [d0, d0 + 16K) over rows [p0, p1), from 0 at row 0 and from out's partial sums after. */
AI void wsum_block(float *out, const float *w, const char *V, size_t vs, int32_t p0, int32_t p1, int32_t d0, int K,
                   int f16) {
    __m512 acc[8];
    UNROLL for (int k = 0; k < K; k++) acc[k] = p0 ? _mm512_loadu_ps(out + d0 + 16 * k) : _mm512_setzero_ps();
    for (int32_t p = p0; p < p1; p++) {
        const char *row = V + (size_t)p * vs;
        const __m512 wp = _mm512_set1_ps(w[p]);
        UNROLL for (int k = 0; k < K; k++) acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(wp, ld16(row, d0 + 16 * k, f16)));
    }
    UNROLL for (int k = 0; k < K; k++) _mm512_storeu_ps(out + d0 + 16 * k, acc[k]);
}

enum { CHUNK = 32 }; /* rows: 32 of 128 F16 values are 8 KiB, in L1 while each block takes its turn */

/* Rows [r0, n) of columns [0, hd & ~15), on from out's partial sums where r0 > 0. */
AI void wsum_rows(float *out, const float *w, const char *V, size_t vs, int32_t r0, int32_t n, int32_t hd, int f16) {
    for (int32_t p0 = r0; p0 < n || p0 == 0; p0 += CHUNK) {
        const int32_t p1 = p0 + CHUNK < n ? p0 + CHUNK : n;
        int32_t d = 0;
        for (; d + 128 <= hd; d += 128) wsum_block(out, w, V, vs, p0, p1, d, 8, f16);
        for (; d + 16 <= hd; d += 16) wsum_block(out, w, V, vs, p0, p1, d, 1, f16);
    }
}

/* The columns past the last 16 as the plain loop does them. */
static void wsum_tail(float *out, const float *w, const char *V, size_t vs, int32_t n, int32_t hd, int f16) {
    const int32_t d = hd & ~15;
    if (d < hd) hr_attn_wsum_c(out + d, w, V + (size_t)d * (f16 ? 2 : 4), vs, n, hd - d, f16);
}

void hr_attn_wsum_avx512(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16) {
    if (f16) wsum_rows(out, w, V, vs, 0, n, hd, 1);
    else wsum_rows(out, w, V, vs, 0, n, hd, 0);
    wsum_tail(out, w, V, vs, n, hd, f16);
}

/* The group's columns [d0, d0 + 16K) over rows [p0, p1) that all of its tokens see: each row
 * loaded and converted once, then each token's products and sums in attn_wsum's order. */
AI void grp_block(float *out, size_t os, const float *w, size_t ws, const char *V, size_t vs, int32_t p0, int32_t p1,
                  int32_t d0, int K, int f16) {
    __m512 acc[HR_WSUM_GRP][4];
    UNROLL for (int i = 0; i < HR_WSUM_GRP; i++)
        UNROLL for (int k = 0; k < K; k++) acc[i][k] = p0 ? _mm512_loadu_ps(out + i * os + d0 + 16 * k) : _mm512_setzero_ps();
    for (int32_t p = p0; p < p1; p++) {
        const char *row = V + (size_t)p * vs;
        __m512 v[4];
        UNROLL for (int k = 0; k < K; k++) v[k] = ld16(row, d0 + 16 * k, f16);
        UNROLL for (int i = 0; i < HR_WSUM_GRP; i++) {
            const __m512 wp = _mm512_set1_ps(w[i * ws + (size_t)p]);
            UNROLL for (int k = 0; k < K; k++) acc[i][k] = _mm512_add_ps(acc[i][k], _mm512_mul_ps(wp, v[k]));
        }
    }
    UNROLL for (int i = 0; i < HR_WSUM_GRP; i++)
        UNROLL for (int k = 0; k < K; k++) _mm512_storeu_ps(out + i * os + d0 + 16 * k, acc[i][k]);
}

/* Rows [0, nmin) for every token, then each token's own rows on from its partial sums. */
AI void grp_rows(float *out, size_t os, const float *w, size_t ws, const char *V, size_t vs, const int32_t *n,
                 int32_t nmin, int32_t hd, int f16) {
    for (int32_t p0 = 0; p0 < nmin || p0 == 0; p0 += CHUNK) {
        const int32_t p1 = p0 + CHUNK < nmin ? p0 + CHUNK : nmin;
        int32_t d = 0;
        for (; d + 64 <= hd; d += 64) grp_block(out, os, w, ws, V, vs, p0, p1, d, 4, f16);
        for (; d + 16 <= hd; d += 16) grp_block(out, os, w, ws, V, vs, p0, p1, d, 1, f16);
    }
    for (int i = 0; i < HR_WSUM_GRP; i++)
        if (n[i] > nmin) wsum_rows(out + i * os, w + i * ws, V, vs, nmin, n[i], hd, f16);
}

void hr_attn_wsum_grp_avx512(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs,
                             const int32_t *n, int32_t hd, int f16) {
    int32_t nmin = n[0];
    for (int i = 1; i < HR_WSUM_GRP; i++) nmin = n[i] < nmin ? n[i] : nmin;
    if (f16) grp_rows(out, os, w, ws, V, vs, n, nmin, hd, 1);
    else grp_rows(out, os, w, ws, V, vs, n, nmin, hd, 0);
    for (int i = 0; i < HR_WSUM_GRP; i++) wsum_tail(out + i * os, w + i * ws, V, vs, n[i], hd, f16);
}
#endif
