/* Two int32 lanes per 32-element block (AVX-512; the includer defines INLINE): a lane sums 16
 * products, a block's quads 0 + 2 or 1 + 3, and 128-bit lane k holds blocks k and 4 + k of a
 * group of 8. Q4_0, Q8_0 (kernels_avx512.c), Q5_0, IQ4_NL and MXFP4 (kquant_legacy_avx512.c)
 * sum in these lanes, so each (row, token) pair converts, scales and adds once per group. */
#ifndef HR_LANES_AVX512_H
#define HR_LANES_AVX512_H
#include <immintrin.h>

/* Registers of a group as quads (q[0], q[1]: elements 0-15 and 16-31 of blocks 0-3, one per
 * 128-bit lane; q[2], q[3] the same of blocks 4-7) into the lanes' byte order: q[0] =
 * elements 0-7 of blocks k and 4 + k in 128-bit lane k, q[1] = 16-23, q[2] = 8-15, q[3] = 24-31. */
INLINE void x_lanes(__m512i q[4]) {
    const __m512i lo0 = q[0], hi0 = q[1], lo1 = q[2], hi1 = q[3];
    q[0] = _mm512_unpacklo_epi64(lo0, lo1), q[2] = _mm512_unpackhi_epi64(lo0, lo1);
    q[1] = _mm512_unpacklo_epi64(hi0, hi1), q[3] = _mm512_unpackhi_epi64(hi0, hi1);
}
/* Two steps' quad lanes (t0: blocks 0-3, t1: 4-7, one block per 128-bit lane) folded into the
 * lanes: two blends, an in-lane shuffle and an add where a second step took a convert, a
 * permute and an FMA. */
INLINE __m512i fold_lanes(__m512i t0, __m512i t1) {
    /* (t0 quads 0, 1, t1 quads 2, 3) + (t0 quads 2, 3, t1 quads 0, 1) per 128-bit lane */
    const __m512i a = _mm512_mask_blend_epi32(0xcccc, t0, t1), b = _mm512_mask_blend_epi32(0xcccc, t1, t0);
    return _mm512_add_epi32(a, _mm512_shuffle_epi32(b, _MM_PERM_BADC));
}
/* lane -> block index within the group */
INLINE __m512i sidx2(void) { return _mm512_setr_epi32(0, 0, 4, 4, 1, 1, 5, 5, 2, 2, 6, 6, 3, 3, 7, 7); }

/* A Q8_0 activation row re-laid for the prompt tiles (kernels_avx512.c), per 8 blocks: the four
 * lane registers (x_lanes), -c * sum(x) per lane for weights stored as w + c (Q4_0's nibbles:
 * c = 8, Q8_0's w ^ 0x80 and IQ4_NL's and MXFP4's tables: 128, Q5_0: 16), and the x scales in
 * the lanes' order, so a tile's lane scale perm(d_w) * perm(d_x) is the permuted product. */
typedef struct { __m512i q[4], nc; __m512 ds; } hr_lanes_x; /* 384 bytes */
/* One (row, token) pair's group over a re-laid activation group g: the weight row's four
 * unsigned lane registers u (weights + c) and lane scales wd; the int32 lanes start at g's
 * -c * sum(x), then the four products in order (every prompt tile and rows4_x of these types). */
INLINE __m512 lanes_step(const __m512i u[4], __m512 wd, const hr_lanes_x *g, __m512 acc) {
    __m512i t = _mm512_load_si512(&g->nc);
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) t = _mm512_dpbusd_epi32(t, u[i], _mm512_load_si512(&g->q[i]));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(wd, _mm512_load_ps(&g->ds)), acc);
}
size_t hr_tile_xbytes_lanes_avx512(int64_t n);
void hr_tile_xprep_lanes_avx512(const void *xq, void *xt, int64_t n, int c);
#endif
