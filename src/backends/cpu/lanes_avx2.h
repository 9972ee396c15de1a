/* Two int32 lanes per 32-element block on 256 bits (the AVX2 and AVX-VNNI tables; the includer
 * defines INLINE): a step covers 4 blocks of a group of 8, 128-bit lane j holding blocks j and
 * 2 + j of the step, lanes 4j, 4j + 1 a block's quads 0 + 2 and 1 + 3 (16 products each). Q4_0,
 * Q8_0 (kernels_avx2.c), Q5_0, IQ4_NL and MXFP4 (kquant_legacy_avx2.c) sum in these lanes, so a
 * (row, token) pair converts, scales and adds once per 4 blocks. */
#ifndef HR_LANES_AVX2_H
#define HR_LANES_AVX2_H
#include <immintrin.h>

#include "kernels_impl.h"

INLINE __m256i two128(const void *a, const void *b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                   _mm_loadu_si128((const __m128i *)b), 1);
}
/* A step's lanes from two pairs of blocks' quad lanes (t0: blocks 0, 1 of the step, t1: 2, 3,
 * one block per 128-bit lane): per 128-bit lane, the first pair's lanes 0 + 2 and 1 + 3, then
 * the second's (32-bit lanes; 16-bit sums move with them). */
INLINE __m256i fold_lanes(__m256i t0, __m256i t1, int w16) {
    const __m256i a = _mm256_blend_epi32(t0, t1, 0xcc), b = _mm256_shuffle_epi32(_mm256_blend_epi32(t1, t0, 0xcc), _MM_SHUFFLE(1, 0, 3, 2));
    return w16 ? _mm256_add_epi16(a, b) : _mm256_add_epi32(a, b);
}
/* lane -> block within the group, for step k */
INLINE __m256i sidx(int k) {
    const int a = 4 * k;
    return _mm256_setr_epi32(a, a, a + 2, a + 2, a + 1, a + 1, a + 3, a + 3);
}
/* A pair's registers (lo: elements 0-15 of blocks 0 and 1 of the step, one per 128-bit lane;
 * hi: 16-31) and the next pair's, as the step's lane registers: o[0] = elements 0-7 of blocks j
 * and 2 + j in 128-bit lane j, o[1] = 16-23, o[2] = 8-15, o[3] = 24-31. */
INLINE void pairs_lanes(__m256i lo0, __m256i hi0, __m256i lo1, __m256i hi1, __m256i o[4]) {
    o[0] = _mm256_unpacklo_epi64(lo0, lo1), o[1] = _mm256_unpacklo_epi64(hi0, hi1);
    o[2] = _mm256_unpackhi_epi64(lo0, lo1), o[3] = _mm256_unpackhi_epi64(hi0, hi1);
}
/* Four Q8_0 blocks (weights or activations) in the two-lane order of a step. */
INLINE void q8_lanes4(const hr_block_q8_0 *B, __m256i o[4]) {
    pairs_lanes(two128(B[0].qs, B[1].qs), two128(B[0].qs + 16, B[1].qs + 16), two128(B[2].qs, B[3].qs),
                two128(B[2].qs + 16, B[3].qs + 16), o);
}

/* A Q8_0 activation row re-laid for the prompt tiles, per 8 blocks and step k: the four lane
 * registers, -c * sum(x) per lane for weights stored as w + c (Q4_0's nibbles: c = 8; Q8_0 on
 * AVX-VNNI as w ^ 0x80: 128; Q5_0: 16; MXFP4: 12; IQ4_NL on AVX-VNNI: 128; tiles that sign x per
 * token ignore it) and the x scales in the lanes' order (the step's scale perm(d_w * d_x) is
 * perm(d_w) * perm(d_x) lane for lane). Built by kernels_avx2.c for both 256-bit tables. */
typedef struct { __m256i q[2][4], nc[2]; __m256 ds[2]; } hr_lanes_x256; /* 384 bytes */
size_t hr_tile_xbytes_lanes_avx2(int64_t n);
void hr_tile_xprep_lanes_avx2(const void *xq, void *xt, int64_t n, int c);
#endif
