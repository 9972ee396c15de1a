/* AVX2 + FMA + F16C kernels of the K-quants (Q2_K ... Q6_K) and IQ4_XS against Q8_K
 * activations, and the Q8_K activation prep.
 *
 * Per 256-element super-block the product is exact integer arithmetic: the weights'
 * small unsigned codes times the int8 activations with maddubs (16-bit pairs, no
 * overflow at these ranges), times the sub-block scales with madd (32-bit lanes). Offsets
 * that do not depend on the element (the mins of Q2_K/Q4_K/Q5_K, the -4 of Q3_K, the -32
 * of Q6_K) are applied once per super-block from the activation's 16-element sums
 * (bsums), so the inner loops stay on unsigned codes. Each super-block then adds
 * d_x*d_w*int (and -d_x*dmin*mins) to an 8-lane float accumulator per (row, token): lane by
 * lane for Q2_K and Q3_K; for Q4_K, Q5_K, Q6_K and IQ4_XS as the lanes' exact total in lane 0
 * (fma_tot), as their prompt panels (tile16, at the end: a GEMM over 16 rows and panels of 16
 * tokens) must add it.
 *
 * vec_dot, rows4 (decode: 4 rows x 1 token), tile (HR_TILE_R x HR_TILE_C), tile_x and tile16
 * compute the same integers and float steps per (row, token) in the same order, so they agree
 * bit for bit (batch independence). The AVX-VNNI table compiles this file again
 * (kquant_k_avxvnni.c). The AVX-512 table has its own kernels (kquant_k_avx512.c) and shares
 * the prep. */
#include "kernels_impl.h"

#if defined(HR_X86) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && \
    (!defined(HR_AVXVNNI) || defined(__AVXVNNI__))
#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))
#include "kquant_k_x86.h"
#include "hsum_avx2.h"
/* acc + madd(a, b): int16 pairs times int16 scales into int32 lanes; one vpdpwssd in the
 * AVX-VNNI build of this file (kquant_k_avxvnni.c). Exact either way. */
#if defined(HR_AVXVNNI)
INLINE __m256i madd_add(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
#else
INLINE __m256i madd_add(__m256i acc, __m256i a, __m256i b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
#endif
/* constant loop indices: shifts, bit positions and shuffle patterns become immediates */
#define UNROLL _Pragma("GCC unroll 8")

INLINE __m256i bcast16(int v) { return _mm256_set1_epi16((short)v); }
/* The 16 int16 sub-block scales of a super-block as two registers holding 8 of them in
 * both 128-bit halves (v[0]: 0-7, v[1]: 8-15), so one in-lane byte shuffle gives a group's
 * pair. */
typedef struct { __m256i v[2]; } scales16;
INLINE scales16 scales16_of(__m256i s16) {
    scales16 s = {{_mm256_permute4x64_epi64(s16, 0x44), _mm256_permute4x64_epi64(s16, 0xee)}};
    return s;
}
INLINE int pat16(int a) { return (2 * a) | (2 * a + 1) << 8 | (2 * a) << 16 | (2 * a + 1) << 24; }
/* group g of 32 elements (maddubs pairs over sub-blocks 2g, 2g+1): scale 2g in int16
 * lanes 0-7, 2g+1 in lanes 8-15 */
INLINE __m256i scale_pair16(const scales16 *s, int g) {
    const int a = 2 * (g & 3);
    return _mm256_shuffle_epi8(s->v[g >> 2], _mm256_setr_epi32(pat16(a), pat16(a), pat16(a), pat16(a), pat16(a + 1),
                                                                pat16(a + 1), pat16(a + 1), pat16(a + 1)));
}
/* Bit b of every byte (other bits clear) moved to bit t: a 16-bit shift cannot carry a
 * lone bit across its byte when only that bit is set. */
INLINE __m256i move_bit(__m256i v, int b, int t) {
    return b > t ? _mm256_srli_epi16(v, b - t) : b < t ? _mm256_slli_epi16(v, t - b) : v;
}
INLINE __m256i sel_bit(__m256i v, int b, int t) { return move_bit(_mm256_and_si256(v, _mm256_set1_epi8((char)(1 << b))), b, t); }

/* acc += d * int lanes */
INLINE __m256 fma_int(__m256 acc, float d, __m256i v) { return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(v), acc); }
/* the exact totals of 4 registers' lanes, register c's in int32 lane c */
_Static_assert(HR_TILE_C == 4, "the tiles keep their 4 tokens' totals in one register");
INLINE __m128i hsum4x8i(const __m256i v[4]) {
    const __m256i a = _mm256_hadd_epi32(v[0], v[1]), b = _mm256_hadd_epi32(v[2], v[3]), c = _mm256_hadd_epi32(a, b);
    return _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
}
/* acc lane c += d lane c * register c's exact total: fma_tot for 4 rows or 4 tokens at once */
INLINE __m128 fma_tot_x4(__m128 acc, __m128 d, const __m256i v[4]) { return _mm_fmadd_ps(d, _mm_cvtepi32_ps(hsum4x8i(v)), acc); }
/* acc lane 0 += d * the lanes' exact integer total, the other lanes left 0: the prompt panels
 * (tile16, below) sum a super-block in another lane order, so only its total can agree */
INLINE __m256 fma_tot(__m256 acc, float d, __m256i v) {
    return _mm256_zextps128_ps256(_mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss((float)hsum8i(v)), _mm256_castps256_ps128(acc)));
}
/* a Q4_K/Q5_K super-block's float steps, in order: acc += dd * sumi, then += dm * mins (dd = dx *
 * d, dm = -dx * dmin), each term's exact total (fma_tot4 takes two super-blocks' four at once) */
INLINE __m256 k45_fin(__m256 acc, float dd, __m256i sumi, float dm, __m256i mins) {
    return fma_tot(fma_tot(acc, dd, sumi), dm, mins);
}
/* fma_tot of 4 terms f[i] * v[i] in order, their totals taken at once */
INLINE __m256 fma_tot4(__m256 acc, const float f[4], const __m256i v[4]) {
    const __m128 t = _mm_cvtepi32_ps(hsum4x8i(v));
    __m128 a = _mm256_castps256_ps128(acc);
    a = _mm_fmadd_ss(_mm_set_ss(f[0]), t, a);
    a = _mm_fmadd_ss(_mm_set_ss(f[1]), _mm_movehdup_ps(t), a);
    a = _mm_fmadd_ss(_mm_set_ss(f[2]), _mm_movehl_ps(t, t), a);
    a = _mm_fmadd_ss(_mm_set_ss(f[3]), _mm_shuffle_ps(t, t, 3), a);
    return _mm256_zextps128_ps256(a);
}

/* ---- Q2_K: 2-bit codes, 16 sub-blocks of 16 with a 4-bit scale and a 4-bit min ---- */
INLINE __m256i q2_codes(__m256i q, int k) { return _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), _mm256_set1_epi8(3)); }
/* the super-block's scaled sums (sumo) and mins terms (mino) against nx activation rows (nx a
 * constant: 1 or 4), each weight register unpacked once for them */
INLINE void sin_q2_K(const hr_block_q2_K *w, const hr_block_q8_K *const *x, int nx, __m256i *sumo, __m256i *mino) {
    const __m128i sm = ld128(w->scales), m4 = _mm_set1_epi8(0x0f);
    const scales16 sc = scales16_of(_mm256_cvtepu8_epi16(_mm_and_si128(sm, m4)));
    const __m256i mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4));
    __m256i sumi[4];
    UNROLL for (int c = 0; c < nx; c++) sumi[c] = _mm256_setzero_si256();
    UNROLL for (int j = 0; j < 2; j++) {
        const __m256i q = ld256(w->qs + 32 * j);
        UNROLL for (int k = 0; k < 4; k++) {
            const __m256i cd = q2_codes(q, k), sp = scale_pair16(&sc, 4 * j + k);
            UNROLL for (int c = 0; c < nx; c++)
                sumi[c] = madd_add(sumi[c], _mm256_maddubs_epi16(cd, ld256(x[c]->qs + 128 * j + 32 * k)), sp);
        }
    }
    UNROLL for (int c = 0; c < nx; c++) sumo[c] = sumi[c], mino[c] = _mm256_madd_epi16(mn, ld256(x[c]->bsums));
}
/* one activation row: the two terms in v[0], v[1] and their factors in f[0], f[1] (fma_tot4's order) */
INLINE void si2_q2_K(const hr_block_q2_K *w, const hr_block_q8_K *x, __m256i v[2], float f[2]) {
    sin_q2_K(w, &x, 1, &v[0], &v[1]);
    f[0] = x->d * _cvtsh_ss(w->d), f[1] = -x->d * _cvtsh_ss(w->dmin);
}
INLINE __m256 sb_q2_K(const hr_block_q2_K *w, const hr_block_q8_K *x, __m256 acc) {
    __m256i v[2];
    float f[2];
    si2_q2_K(w, x, v, f);
    return k45_fin(acc, f[0], v[0], f[1], v[1]);
}

/* ---- Q3_K: 2 low bits + a high bit (set: +0, clear: -4), 16 six-bit signed scales ---- */
/* Code c = low | high << 2 in 0..7 is the value + 4, so the -4 goes into the bsums term. */
/* register k of half j: the codes of elements 128j + 32k .. 128j + 32k + 31 */
INLINE __m256i q3_codes(__m256i q, __m256i hb, int j, int k) {
    return _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), _mm256_set1_epi8(3)), sel_bit(hb, 4 * j + k, 2));
}
/* A super-block of 16 sub-blocks with int16 scales s16 against nx activation rows (nx a
 * constant: 1 in vec_dot's rows, 4 in the plain tile), each weight register unpacked once for
 * them: CODES(h, k), the unsigned codes of elements 128h + 32k .., times the activations, scaled
 * per sub-block, less (s16 . bsums) << SHIFT (the codes' offset: Q3_K's 4, Q6_K's 32). PRE runs
 * first (the half's loads). */
#define SIN16_BODY(PRE, CODES, SHIFT)                                                                       \
    const scales16 sc = scales16_of(s16);                                                                  \
    __m256i sumi[4];                                                                                       \
    UNROLL for (int c = 0; c < nx; c++) sumi[c] = _mm256_setzero_si256();                                  \
    UNROLL for (int h = 0; h < 2; h++) {                                                                   \
        PRE                                                                                                \
        UNROLL for (int k = 0; k < 4; k++) {                                                               \
            const __m256i cd = CODES, sp = scale_pair16(&sc, 4 * h + k);                                   \
            UNROLL for (int c = 0; c < nx; c++)                                                            \
                sumi[c] = madd_add(sumi[c], _mm256_maddubs_epi16(cd, ld256(x[c]->qs + 128 * h + 32 * k)), sp); \
        }                                                                                                  \
    }                                                                                                      \
    UNROLL for (int c = 0; c < nx; c++)                                                                    \
        out[c] = _mm256_sub_epi32(sumi[c], _mm256_slli_epi32(_mm256_madd_epi16(s16, ld256(x[c]->bsums)), SHIFT));
/* one activation row's lanes (si), 4 rows' (si4), and the float step adding the exact total (sb) */
#define SIN16_WRAPPERS(T)                                                                                   \
    INLINE __m256i si_##T(const hr_block_##T *w, const hr_block_q8_K *x) {                                 \
        __m256i o;                                                                                         \
        sin_##T(w, &x, 1, &o);                                                                             \
        return o;                                                                                          \
    }                                                                                                      \
    INLINE void si4_##T(const hr_block_##T *w, const hr_block_q8_K *const x[4], __m256i out[4]) {          \
        sin_##T(w, x, 4, out);                                                                             \
    }                                                                                                      \
    INLINE __m256 sb_##T(const hr_block_##T *w, const hr_block_q8_K *x, __m256 acc) {                      \
        return fma_tot(acc, x->d * _cvtsh_ss(w->d), si_##T(w, x));                                         \
    }
INLINE void sin_q3_K(const hr_block_q3_K *w, const hr_block_q8_K *const *x, int nx, __m256i *out) {
    const __m256i s16 = _mm256_cvtepi8_epi16(q3_scales(w->scales)), hb = ld256(w->hmask);
    SIN16_BODY(const __m256i q = ld256(w->qs + 32 * h);, q3_codes(q, hb, h, k), 2)
}
SIN16_WRAPPERS(q3_K)

/* ---- Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scales and mins (k4_scales_mins) ---- */
INLINE __m256i bcast_scale(__m256i sc2, int k) { /* sc2: the 8 scales in both 128-bit halves */
    return _mm256_shuffle_epi8(sc2, bcast16((2 * k + 1) << 8 | 2 * k));
}

/* Register j of a Q4_K/Q5_K super-block's codes: c[0] those of elements 64j..64j+31 (low
 * nibbles), c[1] of 64j+32.. (high); Q5_K (q5) adds the fifth bits from hb: bit 2j of qh[l]
 * is element 64j+l's, bit 2j+1 element 64j+32+l's. */
INLINE void k45_codes(const uint8_t *qs, __m256i hb, int q5, int j, __m256i c[2]) {
    const __m256i q = ld256(qs + 32 * j), m4 = _mm256_set1_epi8(0x0f);
    c[0] = _mm256_and_si256(q, m4), c[1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if (q5) c[0] = _mm256_or_si256(c[0], sel_bit(hb, 2 * j, 4)), c[1] = _mm256_or_si256(c[1], sel_bit(hb, 2 * j + 1, 4));
}

#define K45_BODY(Q5, HB)                                                                                 \
    const __m256i scm = k4_scales_mins(w->scales);                                                       \
    const __m256i sc2 = dup128(_mm256_castsi256_si128(scm));                                             \
    __m256i sumi = _mm256_setzero_si256();                                                               \
    UNROLL for (int j = 0; j < 4; j++) {                                                                 \
        __m256i c_[2];                                                                                   \
        k45_codes(w->qs, HB, Q5, j, c_);                                                                 \
        const __m256i c0 = c_[0], c1 = c_[1];                                                            \
        const __m256i p0 = _mm256_maddubs_epi16(c0, ld256(x->qs + 64 * j));                              \
        const __m256i p1 = _mm256_maddubs_epi16(c1, ld256(x->qs + 64 * j + 32));                         \
        sumi = madd_add(madd_add(sumi, p0, bcast_scale(sc2, 2 * j)), p1, bcast_scale(sc2, 2 * j + 1)); \
    }                                                                                                    \
    const float dx = x->d;                                                                               \
    return k45_fin(acc, dx * _cvtsh_ss(w->d), sumi, -dx * _cvtsh_ss(w->dmin), k4_mins(scm, x->bsums));

INLINE __m256 sb_q4_K(const hr_block_q4_K *w, const hr_block_q8_K *x, __m256 acc) { K45_BODY(0, _mm256_setzero_si256()) }

INLINE __m256 sb_q5_K(const hr_block_q5_K *w, const hr_block_q8_K *x, __m256 acc) { K45_BODY(1, ld256(w->qh)) }

/* ---- Q6_K: 6-bit codes (value + 32), 16 signed 8-bit scales ---- */
/* register k of half h: the values (0-63) of elements 128h + 32k .. 128h + 32k + 31 */
INLINE __m256i q6_vals(__m256i l0, __m256i l1, __m256i qh, int k) {
    const __m256i lo = k & 1 ? l1 : l0;
    const __m256i nib = _mm256_and_si256(k >= 2 ? _mm256_srli_epi16(lo, 4) : lo, _mm256_set1_epi8(0x0f));
    /* bits 2k, 2k+1 of each qh byte moved to bits 4-5 by one 16-bit shift (none for k = 2) and
     * the mask: the bits that cross from the next byte land outside 0x30. Shifts and shuffles
     * share two of Zen 3's four vector pipes, and were the limit. */
    return _mm256_or_si256(nib, _mm256_and_si256(move_bit(qh, 2 * k, 4), _mm256_set1_epi8(0x30)));
}
INLINE void sin_q6_K(const hr_block_q6_K *w, const hr_block_q8_K *const *x, int nx, __m256i *out) {
    const __m256i s16 = _mm256_cvtepi8_epi16(ld128(w->scales));
    SIN16_BODY(const __m256i l0 = ld256(w->ql + 64 * h); const __m256i l1 = ld256(w->ql + 64 * h + 32);
               const __m256i qh = ld256(w->qh + 32 * h);, q6_vals(l0, l1, qh, k), 5)
}
SIN16_WRAPPERS(q6_K)

/* ---- IQ4_XS: 4-bit indices into the IQ4_NL levels, 8 sub-blocks of 32, 6-bit scales ---- */
/* Two sub-blocks (2p, 2p+1) per step: 128-bit half 0 holds sub-block 2p, half 1 2p+1, so
 * the low nibbles pair with x elements 0-15 of each and the high nibbles with 16-31. */
/* the super-block's integer lanes */
INLINE __m256i si_iq4_xs(const hr_block_iq4_xs *w, const hr_block_q8_K *x) {
    const __m256i lv = dup128(ld128(hr_kvalues_iq4nl)), m4 = _mm256_set1_epi8(0x0f);
    const __m256i ls32 = iq4xs_scales32(w);
    const __m256i ls = _mm256_permute4x64_epi64(_mm256_packs_epi32(ls32, ls32), 0x88); /* int16, both halves */
    __m256i sumi = _mm256_setzero_si256();
    UNROLL for (int p = 0; p < 4; p++) {
        const __m256i q = ld256(w->qs + 32 * p);
        const __m256i vl = _mm256_shuffle_epi8(lv, _mm256_and_si256(q, m4));
        const __m256i vh = _mm256_shuffle_epi8(lv, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
        const __m256i xa = ld256(x->qs + 64 * p), xb = ld256(x->qs + 64 * p + 32);
        const __m256i xl = _mm256_permute2x128_si256(xa, xb, 0x20), xh = _mm256_permute2x128_si256(xa, xb, 0x31);
        /* signed x signed: |v| into maddubs' unsigned side, v's sign onto x */
        const __m256i pl = _mm256_maddubs_epi16(_mm256_sign_epi8(vl, vl), _mm256_sign_epi8(xl, vl));
        const __m256i ph = _mm256_maddubs_epi16(_mm256_sign_epi8(vh, vh), _mm256_sign_epi8(xh, vh));
        const __m256i sc = _mm256_shuffle_epi8(ls, _mm256_setr_epi8(4 * p, 4 * p + 1, 4 * p, 4 * p + 1, 4 * p, 4 * p + 1,
            4 * p, 4 * p + 1, 4 * p, 4 * p + 1, 4 * p, 4 * p + 1, 4 * p, 4 * p + 1, 4 * p, 4 * p + 1, 4 * p + 2, 4 * p + 3,
            4 * p + 2, 4 * p + 3, 4 * p + 2, 4 * p + 3, 4 * p + 2, 4 * p + 3, 4 * p + 2, 4 * p + 3, 4 * p + 2, 4 * p + 3,
            4 * p + 2, 4 * p + 3, 4 * p + 2, 4 * p + 3));
        sumi = madd_add(madd_add(sumi, pl, sc), ph, sc);
    }
    return sumi;
}
INLINE __m256 sb_iq4_xs(const hr_block_iq4_xs *w, const hr_block_q8_K *x, __m256 acc) {
    return fma_tot(acc, x->d * _cvtsh_ss(w->d), si_iq4_xs(w, x));
}

INLINE void si4_iq4_xs(const hr_block_iq4_xs *w, const hr_block_q8_K *const x[4], __m256i out[4]) {
    UNROLL for (int c = 0; c < 4; c++) out[c] = si_iq4_xs(w, x[c]);
}

/* ---- Q4_K / Q5_K in decode: two super-blocks' scales and mins unpacked at once ----
 * k4_scales_mins' steps run on the 12-byte fields of super-blocks i and i+1 side by side, one
 * per 128-bit lane, and stop before widening; each super-block then picks its int16 scale
 * patterns and doubled mins straight from those bytes with a shuffle that also zero-extends
 * (index bytes with the top bit set write zeros). The int16 values are those K45_BODY widens
 * and picks, the sums and float steps the same in the same order, so results are sb_T's bit
 * for bit. In sb_T the unpacking was about a third of the shift and shuffle work, which
 * shares two of Zen 3's four vector pipes with the multiplies' feeding and was its limit. */
INLINE __m256i k4_scales_mins_x2(const uint8_t *s0, const uint8_t *s1) {
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(ld128(s0)), ld128(s1), 1);
    const __m256i a = _mm256_shuffle_epi8(v, dup128(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11)));
    const __m256i b = _mm256_shuffle_epi8(v, dup128(_mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)));
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(a, _mm256_setr_epi32(0, 0, 0, 4, 0, 0, 0, 4)),
                                        dup128(_mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f)));
    const __m256i hi = _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(b, 6), _mm256_set1_epi8(3)), 4);
    return _mm256_or_si256(lo, hi);
}
/* byte k of sb (8 scales then 8 mins, the same in both lanes) zero-extended in every int16 lane */
INLINE __m256i zpick16(__m256i sb, int k) { return _mm256_shuffle_epi8(sb, bcast16(0x8000 | k)); }
/* sb: one super-block's bytes of k4_scales_mins_x2 in both lanes; qh NULL for Q4_K. The
 * super-block's scaled sums into v[0], its mins term into v[1], their factors into f[0], f[1]
 * (fma_tot4's order). */
INLINE void k45_si2(const uint8_t *qs, const uint8_t *qh, __m256i sb, uint16_t d, uint16_t dmin,
                    const hr_block_q8_K *x, __m256i v[2], float f[2]) {
    const __m256i hb = qh ? ld256(qh) : _mm256_setzero_si256();
    __m256i sumi = _mm256_setzero_si256();
    UNROLL for (int j = 0; j < 4; j++) {
        __m256i c[2];
        k45_codes(qs, hb, qh != NULL, j, c);
        const __m256i p0 = _mm256_maddubs_epi16(c[0], ld256(x->qs + 64 * j));
        const __m256i p1 = _mm256_maddubs_epi16(c[1], ld256(x->qs + 64 * j + 32));
        sumi = madd_add(madd_add(sumi, p0, zpick16(sb, 2 * j)), p1, zpick16(sb, 2 * j + 1));
    }
    const float dx = x->d;
    /* k4_mins' layout: int16 lane 2k and 2k+1 hold min k */
    const __m256i md = _mm256_shuffle_epi8(sb, _mm256_setr_epi16(
        (short)0x8008, (short)0x8008, (short)0x8009, (short)0x8009, (short)0x800a, (short)0x800a, (short)0x800b, (short)0x800b,
        (short)0x800c, (short)0x800c, (short)0x800d, (short)0x800d, (short)0x800e, (short)0x800e, (short)0x800f, (short)0x800f));
    v[0] = sumi, v[1] = _mm256_madd_epi16(md, ld256(x->bsums));
    f[0] = dx * _cvtsh_ss(d), f[1] = -dx * _cvtsh_ss(dmin);
}
#define QH_q4_K(b) NULL
#define QH_q5_K(b) (b)->qh

/* ---- drivers: the same super-block function per (row, token) in every shape ---- */
/* Decode streams weight rows from DRAM: vec_dot prefetches PF_AHEAD bytes ahead in the row. */
#define PF_AHEAD 1536
INLINE void pf_block(const char *p, size_t bytes, size_t ahead) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(p + ahead + o, _MM_HINT_T0);
    _mm_prefetch(p + ahead + bytes - 1, _MM_HINT_T0);
}
INLINE void pf_block_l2(const char *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
    _mm_prefetch(p + bytes - 1, _MM_HINT_T1);
}

/* One row W (nb super-blocks) against X into OUT, PFB(i) the prefetch while super-block i is
 * read: vec_dot, rows4's rows and gather4's rows all run this, so they agree bit for bit.
 * Most go super-blocks in groups (KQ_ROW_GROUPS), the rest through sb_T. */
/* super-blocks i.. one at a time through sb_T, then the row's sum into OUT */
#define KQ_ROW_TAIL(T, PFB, OUT)                                                                           \
    for (; i < nb; i++) {                                                                                  \
        PFB(i);                                                                                            \
        a_ = sb_##T(&W[i], &X[i], a_);                                                                     \
    }                                                                                                      \
    OUT = hsum8(a_);
#define KQ_ROW_PLAIN(T, PFB, OUT)                                                                          \
    {                                                                                                      \
        __m256 a_ = _mm256_setzero_ps();                                                                   \
        int64_t i = 0;                                                                                     \
        KQ_ROW_TAIL(T, PFB, OUT)                                                                           \
    }
/* Super-blocks N at a time, GROUP(T, PFB, i, v_, f_) giving their four float terms (fma_tot4's
 * order), the rest one at a time through sb_T: every row loop of the types that add exact
 * totals, sb_T's results bit for bit. */
#define KQ_ROW_GROUPS(T, PFB, OUT, N, GROUP)                                                               \
    {                                                                                                      \
        __m256 a_ = _mm256_setzero_ps();                                                                   \
        int64_t i = 0;                                                                                     \
        for (; i + (N) <= nb; i += (N)) {                                                                  \
            __m256i v_[4];                                                                                 \
            float f_[4];                                                                                   \
            GROUP(T, PFB, i, v_, f_)                                                                       \
            a_ = fma_tot4(a_, f_, v_);                                                                     \
        }                                                                                                  \
        KQ_ROW_TAIL(T, PFB, OUT)                                                                           \
    }
/* Q4_K/Q5_K, two super-blocks: their scales and mins unpacked at once (k4_scales_mins_x2) */
#define PAIR_K45(T, PFB, i, v_, f_)                                                                        \
    const __m256i dec = k4_scales_mins_x2(W[i].scales, W[i + 1].scales);                                   \
    PFB(i);                                                                                                \
    k45_si2(W[i].qs, QH_##T(&W[i]), _mm256_permute2x128_si256(dec, dec, 0x00), W[i].d, W[i].dmin, &X[i],   \
            v_, f_);                                                                                       \
    PFB(i + 1);                                                                                            \
    k45_si2(W[i + 1].qs, QH_##T(&W[i + 1]), _mm256_permute2x128_si256(dec, dec, 0x11), W[i + 1].d,         \
            W[i + 1].dmin, &X[i + 1], v_ + 2, f_ + 2);
/* Q2_K, two super-blocks of two terms each */
#define PAIR_SI2(T, PFB, i, v_, f_)                                                                        \
    PFB(i);                                                                                                \
    si2_##T(&W[i], &X[i], v_, f_);                                                                         \
    PFB(i + 1);                                                                                            \
    si2_##T(&W[i + 1], &X[i + 1], v_ + 2, f_ + 2);
/* Q3_K, Q6_K, IQ4_XS: four super-blocks of one term each */
#define QUAD_SI(T, PFB, i, v_, f_)                                                                         \
    UNROLL for (int u = 0; u < 4; u++) {                                                                   \
        PFB(i + u);                                                                                        \
        v_[u] = si_##T(&W[i + u], &X[i + u]);                                                              \
        f_[u] = X[i + u].d * _cvtsh_ss(W[i + u].d);                                                        \
    }
#define KQ_ROW_K45(T, PFB, OUT) KQ_ROW_GROUPS(T, PFB, OUT, 2, PAIR_K45)
#define KQ_ROW_TOT(T, PFB, OUT) KQ_ROW_GROUPS(T, PFB, OUT, 4, QUAD_SI)
#define KQ_ROW_q2_K(T, PFB, OUT) KQ_ROW_GROUPS(T, PFB, OUT, 2, PAIR_SI2)
#define KQ_ROW_q3_K KQ_ROW_TOT
#define KQ_ROW_q4_K KQ_ROW_K45
#define KQ_ROW_q5_K KQ_ROW_K45
#define KQ_ROW_q6_K KQ_ROW_TOT
#define KQ_ROW_iq4_xs KQ_ROW_TOT
#define PFB_AHEAD(i) pf_block((const char *)&W[i], sizeof(W[0]), PF_AHEAD)

/* rows4 of these types runs its rows one after the other: read side by side (4 streams, each
 * one row long) they came from DRAM 20-35% slower at 1 thread than one row at a time, and the
 * shared activation loads gained nothing in L2 (bench_kernels kq, HEARTH_KERNELS=avx2). Each
 * row also fetches into L2 the bytes it reads of the row PF4_ROWS on (two calls ahead), as the
 * other types' rows4 do. */
#define PF4_ROWS 8
#define PFB_ROWS4(i)                                                                               \
    do {                                                                                           \
        PFB_AHEAD(i);                                                                              \
        pf_block_l2(P + (i) * sizeof(W[0]), sizeof(W[0]));                                         \
    } while (0)
#define ROWS4_SEQ_q4_K 1
#define ROWS4_SEQ_q5_K 1
#define ROWS4_SEQ_q6_K 1
#define KQ_FUNCS(T, BLK)                                                                                    \
    void hr_dot_##T##_avx2(int64_t n, float *s, const void *w, const void *x) {                             \
        const BLK *W = w;                                                                                   \
        const hr_block_q8_K *X = x;                                                                         \
        const int64_t nb = n / HR_QK_K;                                                                     \
        KQ_ROW_##T(T, PFB_AHEAD, *s)                                                                        \
    }                                                                                                       \
    KQ_TILE_##T(T, BLK)
#define KQ_ROWS4(T, BLK)                                                                                    \
    void hr_rows4_##T##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,       \
                             size_t ys) {                                                                   \
        const hr_block_q8_K *X = x;                                                                         \
        const int64_t nb = n / HR_QK_K;                                                                     \
        __m256 acc[4];                                                                                      \
        (void)xs;                                                                                           \
        (void)ys;                                                                                           \
        if (ROWS4_SEQ_##T) { /* one row after the other (see ROWS4_SEQ) */                                 \
            for (int r = 0; r < 4; r++) {                                                                   \
                const BLK *W = (const BLK *)((const char *)w + r * ws);                                     \
                const char *P = (const char *)w + (r + PF4_ROWS) * ws;                                      \
                KQ_ROW_##T(T, PFB_ROWS4, y[r])                                                              \
            }                                                                                               \
            return;                                                                                         \
        }                                                                                                   \
        UNROLL for (int r = 0; r < 4; r++) acc[r] = _mm256_setzero_ps();                                    \
        for (int64_t i = 0; i < nb; i++)                                                                    \
            UNROLL for (int r = 0; r < 4; r++) {                                                            \
                const BLK *b = (const BLK *)((const char *)w + r * ws) + i;                                 \
                pf_block_l2((const char *)b + PF4_ROWS * ws, sizeof(BLK));                                  \
                acc[r] = sb_##T(b, &X[i], acc[r]);                                                          \
            }                                                                                               \
        UNROLL for (int r = 0; r < 4; r++) y[r] = hsum8(acc[r]);                                            \
    }
#define KQ_TILE(T, BLK)                                                                                     \
    void hr_tile_##T##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,        \
                            size_t ys) {                                                                    \
        const char *W = w, *X = x;                                                                          \
        __m256 acc[HR_TILE_R][HR_TILE_C];                                                                   \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                          \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) acc[r][c] = _mm256_setzero_ps();                     \
        for (int64_t i = 0; i < n / HR_QK_K; i++)                                                           \
            UNROLL for (int r = 0; r < HR_TILE_R; r++) {                                                    \
                const BLK *b = (const BLK *)(W + r * ws) + i;                                               \
                pf_block((const char *)b, sizeof(BLK), PF_AHEAD);                                           \
                UNROLL for (int c = 0; c < HR_TILE_C; c++)                                                  \
                    acc[r][c] = sb_##T(b, (const hr_block_q8_K *)(X + c * xs) + i, acc[r][c]);              \
            }                                                                                               \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                          \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) y[c * ys + r] = hsum8(acc[r][c]);                    \
    }

/* The plain tile of the types that add exact totals: a row's 4 tokens (si4_T) and their totals
 * at once */
#define KQ_TILE_TOT(T, BLK)                                                                                 \
    void hr_tile_##T##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,        \
                            size_t ys) {                                                                    \
        const char *W = w, *X = x;                                                                          \
        UNROLL for (int r = 0; r < HR_TILE_R; r++) {                                                        \
            __m128 acc = _mm_setzero_ps();                                                                  \
            for (int64_t i = 0; i < n / HR_QK_K; i++) {                                                     \
                const BLK *b = (const BLK *)(W + r * ws) + i;                                               \
                __m256i v[HR_TILE_C];                                                                       \
                const hr_block_q8_K *xc[HR_TILE_C];                                                         \
                float f[HR_TILE_C], o[HR_TILE_C];                                                           \
                pf_block((const char *)b, sizeof(BLK), PF_AHEAD);                                           \
                UNROLL for (int c = 0; c < HR_TILE_C; c++) {                                                \
                    xc[c] = (const hr_block_q8_K *)(X + c * xs) + i;                                        \
                    f[c] = xc[c]->d * _cvtsh_ss(b->d);                                                      \
                }                                                                                           \
                si4_##T(b, xc, v);                                                                          \
                acc = fma_tot_x4(acc, _mm_loadu_ps(f), v);                     \
                if (i + 1 == n / HR_QK_K) {                                                                 \
                    _mm_storeu_ps(o, acc);                                                                  \
                    UNROLL for (int c = 0; c < HR_TILE_C; c++) y[c * ys + r] = o[c];                        \
                }                                                                                           \
            }                                                                                               \
        }                                                                                                   \
    }
/* Q2_K's plain tile: a row's 4 tokens' two terms, each's totals at once */
#define KQ_TILE_q2_K(T, BLK)                                                                                \
    void hr_tile_q2_K_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,         \
                           size_t ys) {                                                                     \
        const char *W = w, *X = x;                                                                          \
        UNROLL for (int r = 0; r < HR_TILE_R; r++) {                                                        \
            __m128 acc = _mm_setzero_ps();                                                                  \
            float o[HR_TILE_C];                                                                             \
            for (int64_t i = 0; i < n / HR_QK_K; i++) {                                                     \
                const hr_block_q2_K *b = (const hr_block_q2_K *)(W + r * ws) + i;                           \
                const hr_block_q8_K *xc[HR_TILE_C];                                                         \
                __m256i s[HR_TILE_C], m[HR_TILE_C];                                                         \
                float dx[HR_TILE_C];                                                                        \
                pf_block((const char *)b, sizeof *b, PF_AHEAD);                                             \
                UNROLL for (int c = 0; c < HR_TILE_C; c++) xc[c] = (const hr_block_q8_K *)(X + c * xs) + i, dx[c] = xc[c]->d; \
                sin_q2_K(b, xc, HR_TILE_C, s, m);                                                           \
                const __m128 vdx = _mm_loadu_ps(dx);                                                        \
                acc = fma_tot_x4(acc, _mm_mul_ps(vdx, _mm_set1_ps(_cvtsh_ss(b->d))), s); \
                acc = fma_tot_x4(acc, _mm_mul_ps(_mm_xor_ps(vdx, _mm_set1_ps(-0.0f)), _mm_set1_ps(_cvtsh_ss(b->dmin))), m); \
            }                                                                                               \
            _mm_storeu_ps(o, acc);                                                                          \
            UNROLL for (int c = 0; c < HR_TILE_C; c++) y[c * ys + r] = o[c];                                \
        }                                                                                                   \
    }
#define KQ_TILE_q3_K KQ_TILE_TOT
#define KQ_TILE_q4_K KQ_TILE
#define KQ_TILE_q5_K KQ_TILE
#define KQ_TILE_q6_K KQ_TILE_TOT
#define KQ_TILE_iq4_xs KQ_TILE_TOT
KQ_FUNCS(q2_K, hr_block_q2_K)
KQ_FUNCS(q3_K, hr_block_q3_K)
KQ_FUNCS(q4_K, hr_block_q4_K)
KQ_FUNCS(q5_K, hr_block_q5_K)
KQ_FUNCS(q6_K, hr_block_q6_K)
KQ_FUNCS(iq4_xs, hr_block_iq4_xs)
KQ_ROWS4(q4_K, hr_block_q4_K)
KQ_ROWS4(q5_K, hr_block_q5_K)
KQ_ROWS4(q6_K, hr_block_q6_K)
/* rows4 of the types adding exact totals whose rows run side by side (Q3_K, IQ4_XS): the 4
 * rows' super-block totals at once (sb_T's per row), row r's scalar chain in lane r */
#define KQ_ROWS4_TOT(T, BLK)                                                                                \
    void hr_rows4_##T##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,       \
                             size_t ys) {                                                                   \
        const hr_block_q8_K *X = x;                                                                         \
        __m128 acc = _mm_setzero_ps();                                                                      \
        (void)xs, (void)ys;                                                                                 \
        for (int64_t i = 0; i < n / HR_QK_K; i++) {                                                         \
            __m256i s[4];                                                                                   \
            float dw[4];                                                                                    \
            UNROLL for (int r = 0; r < 4; r++) {                                                            \
                const BLK *b = (const BLK *)((const char *)w + r * ws) + i;                                 \
                pf_block_l2((const char *)b + PF4_ROWS * ws, sizeof *b);                                    \
                s[r] = si_##T(b, &X[i]);                                                                    \
                dw[r] = _cvtsh_ss(b->d);                                                                    \
            }                                                                                               \
            acc = fma_tot_x4(acc, _mm_mul_ps(_mm_set1_ps(X[i].d), _mm_loadu_ps(dw)), s); \
        }                                                                                                   \
        _mm_storeu_ps(y, acc);                                                                              \
    }
KQ_ROWS4_TOT(q3_K, hr_block_q3_K)
KQ_ROWS4_TOT(iq4_xs, hr_block_iq4_xs)
/* Q2_K's: the 4 rows' two terms, each's totals at once, in sb_q2_K's order per row */
void hr_rows4_q2_K_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    const hr_block_q8_K *X = x;
    __m128 acc = _mm_setzero_ps();
    (void)xs, (void)ys;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        __m256i s[4], m[4];
        float d[4], dm[4];
        UNROLL for (int r = 0; r < 4; r++) {
            const hr_block_q2_K *b = (const hr_block_q2_K *)((const char *)w + r * ws) + i;
            const hr_block_q8_K *xi = &X[i];
            pf_block_l2((const char *)b + PF4_ROWS * ws, sizeof *b);
            sin_q2_K(b, &xi, 1, &s[r], &m[r]);
            d[r] = _cvtsh_ss(b->d), dm[r] = _cvtsh_ss(b->dmin);
        }
        acc = fma_tot_x4(acc, _mm_mul_ps(_mm_set1_ps(X[i].d), _mm_loadu_ps(d)), s);
        acc = fma_tot_x4(acc, _mm_mul_ps(_mm_set1_ps(-X[i].d), _mm_loadu_ps(dm)), m);
    }
    _mm_storeu_ps(y, acc);
}

/* gather4 (scattered rows, kernels_impl.h): vec_dot's row loop per row, the rows one after the
 * other; while reading a row's super-block it prefetches into L2 the same bytes of its nx row.
 * No prefetch ahead in the row: a gathered row's next bytes may be an inactive row (an L1
 * prefetch of its own row 2 super-blocks on, as AVX-512 has, measured level on Zen 3 and 4). */
#define PFB_GATHER(i) pf_block_l2(P + (i) * sizeof(W[0]), sizeof(W[0]))
#define KQ_GATHER4(T, BLK)                                                                                 \
    void hr_gather4_##T##_avx2(int64_t n, const void *const *wr, const void *const *nx, const void *x,    \
                               float *y) {                                                                 \
        const hr_block_q8_K *X = x;                                                                        \
        const int64_t nb = n / HR_QK_K;                                                                    \
        for (int r = 0; r < 4; r++) {                                                                      \
            const BLK *W = wr[r];                                                                          \
            const char *P = nx[r];                                                                         \
            KQ_ROW_##T(T, PFB_GATHER, y[r])                                                                \
        }                                                                                                  \
    }
KQ_GATHER4(q2_K, hr_block_q2_K)
KQ_GATHER4(q3_K, hr_block_q3_K)
KQ_GATHER4(q4_K, hr_block_q4_K)
KQ_GATHER4(q5_K, hr_block_q5_K)
KQ_GATHER4(q6_K, hr_block_q6_K)
KQ_GATHER4(iq4_xs, hr_block_iq4_xs)

/* ---- prompt tiles over activations re-laid once per batch (tile_x, kernels_impl.h) ----
 * The plain tiles above redo per token the weight side of sb_T (nibble unpacking, scale
 * patterns), and their Q8_K loads straddle cache lines (292-byte blocks). Here each piece of
 * a weight super-block is decoded once per row for the tile's 4 tokens, and the activations
 * come as 320-byte, 64-byte aligned blocks with their bytes in the order the loads want
 * (IQ4_XS: the permute2x128 of sb_iq4_xs done once per batch). Per (row, token) the integer
 * lanes and the float operations are sb_T's, in sb_T's order. */
typedef struct { int8_t qs[HR_QK_K]; int16_t bsums[HR_QK_K / 16]; float d; uint8_t pad[28]; } q8Kt2;
_Static_assert(sizeof(q8Kt2) == 320, "q8Kt2 is 5 cache lines");

size_t hr_tile_xbytes_q8Kt_avx2(int64_t n) { return (size_t)(n / HR_QK_K) * sizeof(q8Kt2); }
/* IQ4_XS pairs the Q8_K block's 16-byte pieces 0 with 2 and 1 with 3 in each 64-byte quarter */
#define ORD2_IQ4 {0, 2, 1, 3}
/* Q4_K's and Q5_K's tiles run their rows one after the other, and a super-block's codes and
 * scale patterns one 32-byte piece (two sub-blocks) at a time for the 4 tokens: decoding a
 * whole super-block first (17 registers) spilled it to the stack and reloaded it per token.
 * The integer lanes are sb_q4_K's / sb_q5_K's (summed in another order: exact), the float
 * steps the same, so the bits are. */
INLINE void tile_x_k45_row(int64_t n, const char *W, size_t bs, int q5, const char *X, size_t xs, float *y, size_t ys) {
    __m128 acc = _mm_setzero_ps(); /* token c in lane c */
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        const char *b = W + i * bs;
        pf_block(b, bs, PF_AHEAD);
        const uint8_t *scales = q5 ? ((const hr_block_q5_K *)b)->scales : ((const hr_block_q4_K *)b)->scales;
        const uint8_t *qs = q5 ? ((const hr_block_q5_K *)b)->qs : ((const hr_block_q4_K *)b)->qs;
        const __m256i scm = k4_scales_mins(scales);
        const __m256i sc2 = dup128(_mm256_castsi256_si128(scm));
        const __m256i hb = q5 ? ld256(((const hr_block_q5_K *)b)->qh) : _mm256_setzero_si256();
        __m256i sumi[HR_TILE_C];
        UNROLL for (int c = 0; c < HR_TILE_C; c++) sumi[c] = _mm256_setzero_si256();
        UNROLL for (int j = 0; j < 4; j++) {
            __m256i cd[2];
            k45_codes(qs, hb, q5, j, cd);
            const __m256i c0 = cd[0], c1 = cd[1];
            const __m256i s0 = bcast_scale(sc2, 2 * j), s1 = bcast_scale(sc2, 2 * j + 1);
            UNROLL for (int c = 0; c < HR_TILE_C; c++) {
                const q8Kt2 *x = (const q8Kt2 *)(X + c * xs) + i;
                const __m256i p0 = _mm256_maddubs_epi16(c0, _mm256_load_si256((const __m256i *)(x->qs + 64 * j)));
                const __m256i p1 = _mm256_maddubs_epi16(c1, _mm256_load_si256((const __m256i *)(x->qs + 64 * j + 32)));
                sumi[c] = madd_add(madd_add(sumi[c], p0, s0), p1, s1);
            }
        }
        const __m256i md = k4_mins_doubled(scm); /* once for the 4 tokens */
        uint16_t d, dmin;
        memcpy(&d, b, 2), memcpy(&dmin, b + 2, 2);
        __m256i mins[HR_TILE_C];
        float dx[HR_TILE_C];
        UNROLL for (int c = 0; c < HR_TILE_C; c++) {
            const q8Kt2 *x = (const q8Kt2 *)(X + c * xs) + i;
            dx[c] = x->d, mins[c] = _mm256_madd_epi16(md, ld256(x->bsums));
        }
        /* k45_fin's totals, the 4 tokens in the lanes of one register */
        const __m128 vdx = _mm_loadu_ps(dx);
        acc = fma_tot_x4(acc, _mm_mul_ps(vdx, _mm_set1_ps(_cvtsh_ss(d))), sumi);
        acc = fma_tot_x4(acc, _mm_mul_ps(_mm_xor_ps(vdx, _mm_set1_ps(-0.0f)), _mm_set1_ps(_cvtsh_ss(dmin))), mins);
    }
    float o[HR_TILE_C];
    _mm_storeu_ps(o, acc);
    UNROLL for (int c = 0; c < HR_TILE_C; c++) y[c * ys] = o[c];
}
#define KQ_TILE_X2_K45(T, BLK, Q5)                                                                        \
    void hr_tile_x_##T##_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y,     \
                              size_t ys) {                                                                \
        UNROLL for (int r = 0; r < HR_TILE_R; r++)                                                        \
            tile_x_k45_row(n, (const char *)w + r * ws, sizeof(BLK), Q5, x, xs, y + r, ys);               \
    }                                                                                                     \
    void hr_tile_xprep_##T##_avx2(const void *xq, void *xt, int64_t n) {                                  \
        const hr_block_q8_K *s = xq;                                                                      \
        q8Kt2 *o = xt;                                                                                    \
        for (int64_t i = 0; i < n / HR_QK_K; i++) {                                                       \
            memcpy(o[i].qs, s[i].qs, sizeof o[i].qs);                                                     \
            memcpy(o[i].bsums, s[i].bsums, sizeof o[i].bsums);                                            \
            o[i].d = s[i].d;                                                                              \
            memset(o[i].pad, 0, sizeof o[i].pad);                                                         \
        }                                                                                                 \
    }
KQ_TILE_X2_K45(q4_K, hr_block_q4_K, 0)
KQ_TILE_X2_K45(q5_K, hr_block_q5_K, 1)
/* IQ4_XS's tile runs its rows one after the other, and within a super-block one sub-block
 * pair at a time for the 4 tokens: the decoded weights of a pair (levels, |levels|, scale
 * pattern: 5 registers) stay in registers, where a whole super-block's (20) spilled to the
 * stack and were reloaded for every token. The integer lanes are sb_iq4_xs's (summed in
 * another order: exact), the float step the same, so the bits are. */
INLINE void tile_x_iq4_xs_row(int64_t n, const hr_block_iq4_xs *W, const char *X, size_t xs, float *y, size_t ys,
                              const int C) { /* C: 4, or 8 (tile_xw) */
    const __m256i lv = dup128(ld128(hr_kvalues_iq4nl)), m4 = _mm256_set1_epi8(0x0f);
    __m128 acc[2] = {_mm_setzero_ps(), _mm_setzero_ps()}; /* token 4h + c in lane c of acc[h]: fma_tot's steps */
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        const hr_block_iq4_xs *b = W + i;
        pf_block((const char *)b, sizeof *b, PF_AHEAD);
        const __m256i ls32 = iq4xs_scales32(b);
        const __m256i ls = _mm256_permute4x64_epi64(_mm256_packs_epi32(ls32, ls32), 0x88);
        __m256i sumi[8];
        UNROLL for (int c = 0; c < C; c++) sumi[c] = _mm256_setzero_si256();
        UNROLL for (int p = 0; p < 4; p++) {
            const __m256i q = ld256(b->qs + 32 * p);
            const __m256i vl = _mm256_shuffle_epi8(lv, _mm256_and_si256(q, m4));
            const __m256i vh = _mm256_shuffle_epi8(lv, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
            const __m256i al = _mm256_sign_epi8(vl, vl), ah = _mm256_sign_epi8(vh, vh);
            const char b0 = (char)(4 * p), b1 = (char)(4 * p + 1), b2 = (char)(4 * p + 2), b3 = (char)(4 * p + 3);
            const __m256i sc = _mm256_shuffle_epi8(ls, _mm256_setr_epi8(b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0,
                                                                        b1, b0, b1, b2, b3, b2, b3, b2, b3, b2, b3, b2, b3,
                                                                        b2, b3, b2, b3, b2, b3));
            UNROLL for (int c = 0; c < C; c++) {
                const q8Kt2 *x = (const q8Kt2 *)(X + c * xs) + i;
                const __m256i xl = _mm256_load_si256((const __m256i *)(x->qs + 64 * p));
                const __m256i xh = _mm256_load_si256((const __m256i *)(x->qs + 64 * p + 32));
                const __m256i pl = _mm256_maddubs_epi16(al, _mm256_sign_epi8(xl, vl));
                const __m256i ph = _mm256_maddubs_epi16(ah, _mm256_sign_epi8(xh, vh));
                sumi[c] = madd_add(madd_add(sumi[c], pl, sc), ph, sc);
            }
        }
        float xd[8];
        UNROLL for (int c = 0; c < C; c++) xd[c] = ((const q8Kt2 *)(X + c * xs) + i)->d;
        UNROLL for (int h = 0; h < C / 4; h++) {
            const __m128 d = _mm_mul_ps(_mm_loadu_ps(xd + 4 * h), _mm_set1_ps(_cvtsh_ss(b->d)));
            acc[h] = fma_tot_x4(acc[h], d, sumi + 4 * h);
        }
    }
    float o[8];
    _mm_storeu_ps(o, acc[0]), _mm_storeu_ps(o + 4, acc[1]);
    UNROLL for (int c = 0; c < C; c++) y[c * ys] = o[c];
}
void hr_tile_x_iq4_xs_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    UNROLL for (int r = 0; r < HR_TILE_R; r++)
        tile_x_iq4_xs_row(n, (const hr_block_iq4_xs *)((const char *)w + r * ws), x, xs, y + r, ys, HR_TILE_C);
}
/* 2 rows x 8 tokens: a sub-block pair's decoded levels serve 8 tokens */
void hr_tile_xw_iq4_xs_avx2(int64_t n, const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ys) {
    UNROLL for (int r = 0; r < 2; r++)
        tile_x_iq4_xs_row(n, (const hr_block_iq4_xs *)((const char *)w + r * ws), x, xs, y + r, ys, 8);
}
void hr_tile_xprep_iq4_xs_avx2(const void *xq, void *xt, int64_t n) {
    static const int ord[4] = ORD2_IQ4;
    const hr_block_q8_K *s = xq;
    q8Kt2 *o = xt;
    for (int64_t i = 0; i < n / HR_QK_K; i++) {
        for (int q = 0; q < 4; q++)
            for (int k = 0; k < 4; k++) memcpy(o[i].qs + 64 * q + 16 * k, s[i].qs + 64 * q + 16 * ord[k], 16);
        memcpy(o[i].bsums, s[i].bsums, sizeof o[i].bsums);
        o[i].d = s[i].d;
        memset(o[i].pad, 0, sizeof o[i].pad);
    }
}

/* ---- Q4_K, Q5_K, Q6_K (and with AVX-VNNI IQ4_XS) prompts: panels of 16 tokens (tile16) ----
 * A GEMM rather than dots: the activations are the wide operand (a panel register holds 8
 * tokens' 4-element column quads, as x + 128, unsigned) and each weight row's quad comes as a
 * broadcast (its integer values, decoded once per call into wq for every token of the call), so
 * a vpdpbusd does 4 rows' worth of nothing but products: no per-(row, token) sign work, no
 * horizontal sums. Per row and sub-block the quads' int32 sums take the sub-block scale
 * (vpmulld). AVX2 has no vpdpbusd: maddubs' int16 pair sums (x + 128 <= 255 against values of
 * at most 15, 31, 63: below 2^15) add up while they fit (2 quads of Q4_K and Q5_K: Q4_K's 4
 * would fit but ran at 0.65x; 1 of Q6_K) and madd multiplies them by the scale into int32; IQ4_XS's levels (to 127) would saturate, so
 * it keeps tile_x there. Per super-block the exact total loses the + 128 term (bias = 128 * sum of scale x
 * value, a per-row constant) and the term a type adds per token from the activations' sums
 * (Q4_K/Q5_K's mins, Q6_K's -32 offset: vpdpwssd over the panel's sums), and each term adds
 * into the float accumulator as vec_dot adds its exact total (fma_tot, k45_fin): the same
 * integers, the same float operations, so the bits are vec_dot's. */
#define KP_D 4096                 /* a panel super-block: 64 quads x 16 tokens x 4 bytes; then */
#define KP_S32 (KP_D + 64)        /* the 16 tokens' scales; per token 4 dwords: the sums of x */
#define KP_S16 (KP_S32 + 256)     /* per 32 as int16 pairs; per token 8 dwords: per 16 */
#define KP_PB (KP_S16 + 512)

size_t hr_tile16_bytes_q8K_avx2(int64_t n) { return (size_t)(n / HR_QK_K) * KP_PB; }

void hr_tile16_prep_q8K_avx2(const void *xq, size_t xs, int n_x, void *panel, int64_t n) {
    uint8_t *P = panel;
    for (int64_t i = 0; i < n / HR_QK_K; i++, P += KP_PB) {
        float *d = (float *)(P + KP_D);
        int16_t *s32 = (int16_t *)(P + KP_S32), *s16 = (int16_t *)(P + KP_S16);
        for (int c = 0; c < 16; c++) {
            const hr_block_q8_K *x = c < n_x ? (const hr_block_q8_K *)((const char *)xq + (size_t)c * xs) + i : NULL;
            for (int k = 0; k < 64; k++)
                for (int b = 0; b < 4; b++) P[k * 64 + 4 * c + b] = (uint8_t)(x ? (uint8_t)x->qs[4 * k + b] ^ 0x80 : 0x80);
            d[c] = x ? x->d : 0.0f;
            for (int j = 0; j < 16; j++) /* dword j / 2 of token c holds sums j & ~1, j | 1 */
                s16[(j / 2) * 32 + 2 * c + (j & 1)] = x ? x->bsums[j] : 0;
            for (int j = 0; j < 8; j++)
                s32[(j / 2) * 32 + 2 * c + (j & 1)] = (int16_t)(x ? x->bsums[2 * j] + x->bsums[2 * j + 1] : 0);
        }
    }
}

typedef struct {
    int8_t wq[16][HR_QK_K];
    int32_t sc[16][16], bias[16];
    int32_t pr[16][8]; /* int16 pairs against the panel's sums: Q4_K/Q5_K mins, Q6_K scales */
    float d[16], dmin[16];
} kp_rows;
enum { KP_IQ4_XS, KP_Q4_K, KP_Q5_K, KP_Q6_K, KP_Q3_K, KP_Q2_K };

/* the sum of v's 32 bytes less 32 * c (the values of w + c), or of halves (sum16) */
INLINE int32_t kp_sum32(__m256i v, int c) {
    const __m256i a = _mm256_sad_epu8(v, _mm256_setzero_si256());
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    return (int32_t)(_mm_cvtsi128_si64(_mm_add_epi64(h, _mm_unpackhi_epi64(h, h))) - 32 * c);
}
INLINE void kp_sum16(__m256i v, int32_t *o) {
    const __m256i a = _mm256_sad_epu8(v, _mm256_setzero_si256());
    o[0] = (int32_t)(_mm256_extract_epi64(a, 0) + _mm256_extract_epi64(a, 1));
    o[1] = (int32_t)(_mm256_extract_epi64(a, 2) + _mm256_extract_epi64(a, 3));
}
/* the 32 values v of elements off.. of row r into wq, their two halves' sums into sb */
INLINE void kp_put16(kp_rows *o, int r, int off, __m256i v, int32_t *sb) {
    _mm256_store_si256((__m256i *)(o->wq[r] + off), v);
    kp_sum16(v, sb + off / 16);
}
/* row r's super-block at b: values in column order, scales, the + 128 term, d (dmin, pairs) */
INLINE void kp_decode_iq4_xs(kp_rows *o, int r, const char *b_) {
    const hr_block_iq4_xs *b = (const hr_block_iq4_xs *)b_;
    const __m256i lv = dup128(ld128(hr_kvalues_iq4nl)), m4 = _mm256_set1_epi8(0x0f), k80 = _mm256_set1_epi8((char)0x80);
    int32_t sb[8]; /* the values' sum per sub-block */
    UNROLL for (int p = 0; p < 4; p++) {
        const __m256i q = ld256(b->qs + 32 * p);
        const __m256i lo = _mm256_shuffle_epi8(lv, _mm256_and_si256(q, m4));
        const __m256i hi = _mm256_shuffle_epi8(lv, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
        const __m256i s0 = _mm256_permute2x128_si256(lo, hi, 0x20), s1 = _mm256_permute2x128_si256(lo, hi, 0x31);
        _mm256_store_si256((__m256i *)(o->wq[r] + 64 * p), s0); /* sub-block 2p */
        _mm256_store_si256((__m256i *)(o->wq[r] + 64 * p + 32), s1);
        sb[2 * p] = kp_sum32(_mm256_xor_si256(s0, k80), 128), sb[2 * p + 1] = kp_sum32(_mm256_xor_si256(s1, k80), 128);
    }
    const __m256i ls = iq4xs_scales32(b);
    _mm256_storeu_si256((__m256i *)o->sc[r], ls);
    o->bias[r] = 128 * hsum8i(_mm256_mullo_epi32(ls, _mm256_loadu_si256((const __m256i *)sb)));
    o->d[r] = _cvtsh_ss(b->d);
}
INLINE void kp_decode_k45(kp_rows *o, int r, const char *b_, int q5) {
    const uint8_t *scales = q5 ? ((const hr_block_q5_K *)b_)->scales : ((const hr_block_q4_K *)b_)->scales;
    const uint8_t *qs = q5 ? ((const hr_block_q5_K *)b_)->qs : ((const hr_block_q4_K *)b_)->qs;
    const __m256i hb = q5 ? ld256(((const hr_block_q5_K *)b_)->qh) : _mm256_setzero_si256();
    int32_t sb[8];
    UNROLL for (int j = 0; j < 4; j++) {
        __m256i c[2];
        k45_codes(qs, hb, q5, j, c);
        _mm256_store_si256((__m256i *)(o->wq[r] + 64 * j), c[0]);
        _mm256_store_si256((__m256i *)(o->wq[r] + 64 * j + 32), c[1]);
        sb[2 * j] = kp_sum32(c[0], 0), sb[2 * j + 1] = kp_sum32(c[1], 0);
    }
    const __m256i scm = k4_scales_mins(scales); /* int16: scales 0-7, mins 0-7 */
    const __m256i sc = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(scm));
    _mm256_storeu_si256((__m256i *)o->sc[r], sc);
    _mm_storeu_si128((__m128i *)o->pr[r], _mm256_extracti128_si256(scm, 1));
    o->bias[r] = 128 * hsum8i(_mm256_mullo_epi32(sc, _mm256_loadu_si256((const __m256i *)sb)));
    uint16_t d, dmin;
    memcpy(&d, b_, 2), memcpy(&dmin, b_ + 2, 2);
    o->d[r] = _cvtsh_ss(d), o->dmin[r] = _cvtsh_ss(dmin);
}
/* 16 sub-blocks' int16 scales s16 (values sums sb): as int32, as pairs, and the + 128 term */
INLINE void kp_scales16(kp_rows *o, int r, __m256i s16, const int32_t sb[16]) {
    const __m256i s0 = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(s16)), s1 = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(s16, 1));
    _mm256_storeu_si256((__m256i *)o->sc[r], s0);
    _mm256_storeu_si256((__m256i *)(o->sc[r] + 8), s1);
    _mm256_storeu_si256((__m256i *)o->pr[r], s16);
    o->bias[r] = 128 * (hsum8i(_mm256_mullo_epi32(s0, _mm256_loadu_si256((const __m256i *)sb))) +
                        hsum8i(_mm256_mullo_epi32(s1, _mm256_loadu_si256((const __m256i *)(sb + 8)))));
}
INLINE void kp_decode_q6_K(kp_rows *o, int r, const char *b_) {
    const hr_block_q6_K *w = (const hr_block_q6_K *)b_;
    int32_t sb[16];
    UNROLL for (int h = 0; h < 2; h++) {
        const __m256i l0 = ld256(w->ql + 64 * h), l1 = ld256(w->ql + 64 * h + 32), qh = ld256(w->qh + 32 * h);
        UNROLL for (int k = 0; k < 4; k++) {
            kp_put16(o, r, 128 * h + 32 * k, q6_vals(l0, l1, qh, k), sb);
        }
    }
    kp_scales16(o, r, _mm256_cvtepi8_epi16(ld128(w->scales)), sb);
    o->d[r] = _cvtsh_ss(w->d);
}

INLINE void kp_decode_q2_K(kp_rows *o, int r, const char *b_) {
    const hr_block_q2_K *w = (const hr_block_q2_K *)b_;
    int32_t sb[16];
    UNROLL for (int j = 0; j < 2; j++) {
        const __m256i q = ld256(w->qs + 32 * j);
        UNROLL for (int k = 0; k < 4; k++) kp_put16(o, r, 128 * j + 32 * k, q2_codes(q, k), sb);
    }
    const __m128i sm = ld128(w->scales), m4 = _mm_set1_epi8(0x0f);
    kp_scales16(o, r, _mm256_cvtepu8_epi16(_mm_and_si128(sm, m4)), sb);
    _mm256_storeu_si256((__m256i *)o->pr[r], _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4))); /* the mins */
    o->d[r] = _cvtsh_ss(w->d), o->dmin[r] = _cvtsh_ss(w->dmin);
}
INLINE void kp_decode_q3_K(kp_rows *o, int r, const char *b_) {
    const hr_block_q3_K *w = (const hr_block_q3_K *)b_;
    const __m256i hb = ld256(w->hmask);
    int32_t sb[16];
    UNROLL for (int j = 0; j < 2; j++) {
        const __m256i q = ld256(w->qs + 32 * j);
        UNROLL for (int k = 0; k < 4; k++) kp_put16(o, r, 128 * j + 32 * k, q3_codes(q, hb, j, k), sb);
    }
    kp_scales16(o, r, _mm256_cvtepi8_epi16(q3_scales(w->scales)), sb);
    o->d[r] = _cvtsh_ss(w->d);
}

/* rows 4g..4g+3 against 8 tokens of a panel's super-block (P: its first byte, t8: the tokens'
 * offset in it, 0 or 8) into acc[row * as + token]; nsb sub-blocks of 32 / nsb * 8 values */
INLINE void kp_rows4x8(const kp_rows *w, int g, int kind, const uint8_t *P, int t8, float *acc, size_t as) {
    const int s16 = kind == KP_Q6_K || kind == KP_Q3_K || kind == KP_Q2_K; /* sub-blocks of 16 */
    const int minsf = kind == KP_Q4_K || kind == KP_Q5_K || kind == KP_Q2_K; /* the sums' term: dmin's */
    const int nsb = s16 ? 16 : 8, qpsb = 64 / nsb;
    const uint8_t *Q = P + 4 * t8;
    const __m256 xd = _mm256_loadu_ps((const float *)(P + KP_D) + t8);
    __m256i isum[4];
    UNROLL for (int r = 0; r < 4; r++) isum[r] = _mm256_setzero_si256();
#if defined(HR_AVXVNNI)
    for (int sb = 0; sb < nsb; sb++) {
        __m256i part[4];
        UNROLL for (int r = 0; r < 4; r++) part[r] = _mm256_setzero_si256();
        UNROLL for (int q = 0; q < qpsb; q++) {
            const int k = qpsb * sb + q;
            const __m256i xv = _mm256_load_si256((const __m256i *)(Q + 64 * k));
            UNROLL for (int r = 0; r < 4; r++) {
                int32_t wv;
                memcpy(&wv, w->wq[4 * g + r] + 4 * k, 4);
                part[r] = _mm256_dpbusd_avx_epi32(part[r], xv, _mm256_set1_epi32(wv));
            }
        }
        UNROLL for (int r = 0; r < 4; r++)
            isum[r] = _mm256_add_epi32(isum[r], _mm256_mullo_epi32(part[r], _mm256_set1_epi32(w->sc[4 * g + r][sb])));
    }
#else
    const int run = kind == KP_Q6_K ? 1 : 2; /* quads whose int16 sums fit */
    for (int sb = 0; sb < nsb; sb++)
        for (int q0 = 0; q0 < qpsb; q0 += run) {
            __m256i part[4];
            UNROLL for (int q = 0; q < run; q++) {
                const int k = qpsb * sb + q0 + q;
                const __m256i xv = _mm256_load_si256((const __m256i *)(Q + 64 * k));
                UNROLL for (int r = 0; r < 4; r++) {
                    int32_t wv;
                    memcpy(&wv, w->wq[4 * g + r] + 4 * k, 4);
                    const __m256i p = _mm256_maddubs_epi16(xv, _mm256_set1_epi32(wv));
                    part[r] = q ? _mm256_add_epi16(part[r], p) : p;
                }
            }
            UNROLL for (int r = 0; r < 4; r++)
                isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(part[r], _mm256_set1_epi16((short)w->sc[4 * g + r][sb])));
        }
#endif
    /* the per-token term: np int16 pairs of the row against the panel's sums S */
    const int np = s16 ? 8 : kind == KP_IQ4_XS ? 0 : 4;
    const uint8_t *S = P + (s16 ? KP_S16 : KP_S32) + 4 * t8;
    const __m256 nxd = _mm256_xor_ps(xd, _mm256_set1_ps(-0.0f)); /* -dx, for dmin's step */
    UNROLL for (int r = 0; r < 4; r++) {
        const int R = 4 * g + r;
        float *a = acc + (size_t)R * as;
        __m256i t = _mm256_sub_epi32(isum[r], _mm256_set1_epi32(w->bias[R])), pt = _mm256_setzero_si256();
        for (int i = 0; i < np; i++)
            pt = madd_add(pt, _mm256_load_si256((const __m256i *)(S + 64 * i)), _mm256_set1_epi32(w->pr[R][i]));
        if (!minsf && s16) t = _mm256_sub_epi32(t, _mm256_slli_epi32(pt, kind == KP_Q6_K ? 5 : 2)); /* -32 / -4 offsets */
        __m256 s = _mm256_fmadd_ps(_mm256_mul_ps(xd, _mm256_set1_ps(w->d[R])), _mm256_cvtepi32_ps(t), _mm256_load_ps(a));
        if (minsf) /* k45_fin's second term, -dx * dmin */
            s = _mm256_fmadd_ps(_mm256_mul_ps(nxd, _mm256_set1_ps(w->dmin[R])), _mm256_cvtepi32_ps(pt), s);
        _mm256_store_ps(a, s);
    }
}

#define KP_TOK 64 /* tokens per pass: matmul's token blocks */
/* 16 rows of super-blocks of bs bytes */
INLINE void kp_tile16(int kind, size_t bs, int64_t n, const char *w, size_t ws, const char *panels, size_t pb, float *y,
                      size_t ys, int n_x) {
    kp_rows d __attribute__((aligned(32)));
    float acc[16][KP_TOK] __attribute__((aligned(32)));
    for (int t0 = 0; t0 < n_x; t0 += KP_TOK) {
        const int nt = n_x - t0 < KP_TOK ? n_x - t0 : KP_TOK;
        memset(acc, 0, sizeof acc);
        for (int64_t i = 0; i < n / HR_QK_K; i++) {
            for (int r = 0; r < 16; r++) {
                const char *b = w + r * ws + i * bs;
                if (kind == KP_IQ4_XS) kp_decode_iq4_xs(&d, r, b);
                else if (kind == KP_Q6_K) kp_decode_q6_K(&d, r, b);
                else if (kind == KP_Q3_K) kp_decode_q3_K(&d, r, b);
                else if (kind == KP_Q2_K) kp_decode_q2_K(&d, r, b);
                else kp_decode_k45(&d, r, b, kind == KP_Q5_K);
            }
            for (int h = 0; 8 * h < nt; h++) { /* 8 tokens: half (t0 + 8h) % 16 / 8 of panel (t0 + 8h) / 16 */
                const int t = t0 + 8 * h;
                const uint8_t *P = (const uint8_t *)panels + (size_t)(t / 16) * pb + (size_t)i * KP_PB;
                UNROLL for (int g = 0; g < 4; g++) kp_rows4x8(&d, g, kind, P, t % 16, &acc[0][8 * h], KP_TOK);
            }
        }
        for (int c = 0; c < nt; c++)
            for (int r = 0; r < 16; r++) y[(size_t)(t0 + c) * ys + r] = acc[r][c];
    }
}
#define KP_FUNC(T, KIND, BLK)                                                                                       \
    void hr_tile16_##T##_avx2(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y,          \
                              size_t ys, int n_x) {                                                                 \
        kp_tile16(KIND, sizeof(BLK), n, w, ws, panels, pb, y, ys, n_x);                                             \
    }
#if defined(HR_AVXVNNI)
KP_FUNC(iq4_xs, KP_IQ4_XS, hr_block_iq4_xs)
#endif
KP_FUNC(q4_K, KP_Q4_K, hr_block_q4_K)
KP_FUNC(q5_K, KP_Q5_K, hr_block_q5_K)
KP_FUNC(q6_K, KP_Q6_K, hr_block_q6_K)
KP_FUNC(q3_K, KP_Q3_K, hr_block_q3_K)
KP_FUNC(q2_K, KP_Q2_K, hr_block_q2_K)

#if !defined(HR_AVXVNNI) /* the AVX-VNNI build uses this one */
/* ---- Q8_K prep: byte-identical to hr_prep_q8_K_scalar (ggml's quantize_row_q8_K_ref) ----
 * The scale comes from the first element of largest magnitude, sign included
 * (iscale = -127/max), values round half to even by the 1.5*2^23 trick and keep only the
 * low byte after min(127, v), as the scalar int8 store does. NaNs are skipped by the
 * maximum (max_ps returns its second operand when either is NaN, and that operand is the
 * running maximum), as the scalar loop's comparison skips them. */
void hr_prep_q8_K_avx2(const float *x, void *xq, int64_t n) {
    hr_block_q8_K *y = xq;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / HR_QK_K; b++, x += HR_QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < HR_QK_K; j += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), m);
        __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        float mx = 0.0f; /* first element whose magnitude equals amax */
        const __m256 va = _mm256_set1_ps(amax);
        for (int j = 0; j < HR_QK_K; j += 8) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), va, _CMP_EQ_OQ));
            if (hit) {
                mx = x[j + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.f / mx;
        const __m256 vs = _mm256_set1_ps(iscale), big = _mm256_set1_ps(12582912.f);
        const __m256i mant = _mm256_set1_epi32(0x007fffff), half = _mm256_set1_epi32(0x00400000);
        const __m256i c127 = _mm256_set1_epi32(127);
        /* low byte of each 32-bit lane into the low 4 bytes of each 128-bit half */
        const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                              -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
        for (int j = 0; j < HR_QK_K; j += 8) {
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vs), big);
            __m256i q = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v), mant), half);
            q = _mm256_shuffle_epi8(_mm256_min_epi32(q, c127), pick);
            const uint32_t lo = (uint32_t)_mm256_extract_epi32(q, 0), hi = (uint32_t)_mm256_extract_epi32(q, 4);
            memcpy(y[b].qs + j, &lo, 4);
            memcpy(y[b].qs + j + 4, &hi, 4);
        }
        const __m256i ones = _mm256_set1_epi8(1);
        for (int j = 0; j < HR_QK_K / 16; j += 2) {
            /* sums of 16 int8: maddubs(1, q) gives pair sums, then 8 pairs per half */
            const __m256i p = _mm256_maddubs_epi16(ones, ld256(y[b].qs + 16 * j));
            const __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
            const __m256i t = _mm256_hadd_epi32(s, s); /* per half: [a+b, c+d, a+b, c+d] */
            const __m256i u = _mm256_hadd_epi32(t, t);
            y[b].bsums[j] = (int16_t)_mm256_extract_epi32(u, 0);
            y[b].bsums[j + 1] = (int16_t)_mm256_extract_epi32(u, 4);
        }
        y[b].d = 1 / iscale;
    }
}
#endif
#endif
