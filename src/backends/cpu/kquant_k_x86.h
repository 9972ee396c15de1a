/* x86 helpers shared by kquant_k_avx2.c and kquant_k_avx512.c: loads, and the unpacking
 * of the K-quants' packed sub-block scales (AVX2 level; inlined into either file's
 * kernels). The includer defines INLINE. */
#ifndef HR_KQUANT_K_X86_H
#define HR_KQUANT_K_X86_H
#include <immintrin.h>
#include <string.h>

#include "kernels_impl.h"

INLINE __m256i ld256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
INLINE __m128i ld128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
INLINE uint32_t ld32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
INLINE __m256i dup128(__m128i v) { return _mm256_inserti128_si256(_mm256_castsi128_si256(v), v, 1); }
/* Q3_K: the 16 six-bit scales, -32, as int8 */
INLINE __m128i q3_scales(const uint8_t *s) {
    const uint32_t u0 = ld32(s), u1 = ld32(s + 4), u2 = ld32(s + 8), lo = 0x0f0f0f0f, hi = 0x03030303;
    const __m128i v = _mm_setr_epi32((int)((u0 & lo) | (u2 & hi) << 4), (int)((u1 & lo) | ((u2 >> 2) & hi) << 4),
                                     (int)(((u0 >> 4) & lo) | ((u2 >> 4) & hi) << 4),
                                     (int)(((u1 >> 4) & lo) | ((u2 >> 6) & hi) << 4));
    return _mm_sub_epi8(v, _mm_set1_epi8(32));
}
/* ---- Q4_K / Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes ---- */
/* int16 lanes 0-7: scales 0-7 (low 128 bits), 8-15: mins 0-7. Bytes 0-3 hold scales 0-3
 * and 4-7 mins 0-3 (6 bits each); bytes 8-11 the low 4 bits of scales 4-7 (low nibbles)
 * and mins 4-7 (high nibbles), whose top 2 bits are the top bits of bytes 0-3 / 4-7.
 * Done in vector registers: the 16-byte load reads 4 bytes of qs past the scales. */
INLINE __m256i k4_scales_mins(const uint8_t *s) {
    const __m128i v = ld128(s);
    /* dwords: [b0-3, b8-11, b4-7, b8-11] and, for the top bits, [0, b0-3, 0, b4-7] */
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                     _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i hi = _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(b, 6), _mm_set1_epi8(3)), 4);
    return _mm256_cvtepu8_epi16(_mm_or_si128(lo, hi));
}
/* the mins term: lane k = min[k] * (bsum[2k] + bsum[2k+1]) */
/* the 8 mins of k4_scales_mins' result, each doubled: int16 lanes 2k and 2k+1 hold min k */
INLINE __m256i k4_mins_doubled(__m256i scm) {
    const __m128i mn = _mm256_extracti128_si256(scm, 1);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(mn, mn)), _mm_unpackhi_epi16(mn, mn), 1);
}
INLINE __m256i k4_mins(__m256i scm, const int16_t *bsums) { return _mm256_madd_epi16(k4_mins_doubled(scm), ld256(bsums)); }
/* IQ4_XS: the 8 sub-block scales (6 bits, -32) as int32 */
INLINE __m256i iq4xs_scales32(const hr_block_iq4_xs *w) {
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(w->scales_l)),
                                                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                        _mm256_set1_epi32(0xf));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w->scales_h),
                                                          _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                        _mm256_set1_epi32(3));
    return _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
}
#endif
