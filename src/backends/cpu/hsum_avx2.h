/* Horizontal sums of one 256-bit register, shared by the AVX2 and AVX-VNNI kernel files (the
 * includer defines INLINE and the target). The float sum's order is fixed (halves, then pairs,
 * then the last two), so every kernel that ends a row with it rounds the same way. */
#ifndef HR_HSUM_AVX2_H
#define HR_HSUM_AVX2_H
#include <immintrin.h>

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
#endif
