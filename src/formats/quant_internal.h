/* Shared pieces of the reference quantizers (quant_legacy.c, quant_k.c, quant_k_search.c).
 * Bit-exactness with ggml rests on doing the same float operations in the same order, so
 * every helper here states the exact rounding it performs. */
#ifndef HR_QUANT_INTERNAL_H
#define HR_QUANT_INTERNAL_H
#include <stdint.h>
#include <string.h>

#include "types.h"

/* Groups whose largest magnitude is below this are treated as all zero (ggml's threshold). */
#define HR_GROUP_EPS 1e-15f

/* Round to the nearest integer, ties to even, by adding 1.5 * 2^23: the float adder does the
 * rounding and the integer lands in the low mantissa bits. Exact for |v| < 2^22, which covers
 * every use; beyond that (or for NaN/Inf) it still returns a deterministic int from the bits,
 * as ggml's version does, and every caller clamps the result. */
static inline int hr_qnearest(float v) {
    float biased = v + 12582912.0f;
    int32_t bits;
    memcpy(&bits, &biased, sizeof bits);
    return (int)(bits & 0x007fffff) - 0x00400000;
}

static inline int hr_qclamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* C's float-to-int conversion, truncating toward zero, made total: out-of-range values and
 * NaN give INT32_MIN, which is what x86's cvttss2si (and so ggml's compiled casts) yields.
 * Finite in-range values convert exactly as a plain cast would. */
static inline int32_t hr_qtrunc(float v) {
    if (v > -2147483648.0f && v < 2147483648.0f) return (int32_t)v;
    return INT32_MIN;
}

/* Index of the level of a sorted 16-entry table nearest to v; a tie between two neighbours
 * goes to the upper one. NaN lands on the last index (every comparison fails). */
static inline int hr_qbest_index(const int8_t *levels, float v) {
    if (v <= levels[0]) return 0;
    if (v >= levels[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < levels[mid]) hi = mid;
        else lo = mid;
    }
    return v - levels[hi - 1] < levels[hi] - v ? hi - 1 : hi;
}

/* hr_qbest_index(hr_kvalues_iq4nl, v) by lookup instead of a search (the IQ4 quantizers try
 * 16 scales on every element, so this is their inner loop). Nearest-with-ties-up is the same
 * as counting the midpoints (a+b)/2 of neighbouring levels that v reaches: the float
 * differences the search compares are exact wherever they are close, so it never rounds
 * differently. The midpoints are half-integers, so floor(2v) (2v is exact) decides, and the
 * table (quant_k_search.c) maps floor(2v) in [-232, 215] to the index; NaN gives 15, as the
 * search's failing comparisons do. v2 must be 2v, which callers fold into their scale. */
extern const uint8_t hr_iq4_index_of_2v[448];
static inline int hr_iq4_index_2v(float v2) {
    if (v2 != v2) return 15;
    v2 = v2 < -232.0f ? -232.0f : v2;
    v2 = v2 > 215.0f ? 215.0f : v2;
    int f = (int)v2;
    f -= (float)f > v2; /* truncation to floor for negative non-integers */
    return hr_iq4_index_of_2v[f + 232];
}

/* Scale searches (quant_k_search.c). Each fills L with the chosen levels and returns the
 * scale; the weight variants take per-element weights. */
/* Symmetric levels -nmax..nmax-1 stored offset by nmax, weights x^2, trying 18 nearby
 * scales (Q6_K). */
float hr_qsearch_sym(int n, int nmax, const float *x, int8_t *L);
/* Symmetric levels -nmax..nmax-1 (offset by nmax), refined element by element (Q3_K). */
float hr_qsearch_sym_refine(int n, int nmax, const float *x, int8_t *L);
/* Levels 0..nmax with a minimum: value = scale * L - min; *neg_min receives min (>= 0).
 * Tries nstep + 1 scales starting at (nmax + rmin) and growing by rdelta; use_abs picks
 * weighted absolute over weighted squared error (Q2_K, Q4_K, Q5_K). */
float hr_qsearch_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                     float rmin, float rdelta, int nstep, bool use_abs);
/* IQ4_NL/IQ4_XS sub-block of 32 against the non-linear levels, weights x^2: returns the scale
 * (0 for an all-zero block, leaving L untouched) and, when ntry > 0, tries 2*ntry+1 more
 * scales (IQ4_XS; ntry at most 7); L holds the levels of the first guess. */
float hr_qsearch_iq4(const float *x, uint8_t *L, int ntry);
void hr_quant_iq4_nl_file(const float *x, hr_block_iq4_nl *y, int64_t n);

/* Per-type quantizers, n a multiple of the block. */
void hr_quant_q4_1(const float *x, hr_block_q4_1 *y, int64_t n);
void hr_quant_q5_0(const float *x, hr_block_q5_0 *y, int64_t n);
void hr_quant_q5_1(const float *x, hr_block_q5_1 *y, int64_t n);
void hr_quant_q8_1(const float *x, hr_block_q8_1 *y, int64_t n);
void hr_quant_iq4_nl(const float *x, hr_block_iq4_nl *y, int64_t n);
void hr_quant_mxfp4(const float *x, hr_block_mxfp4 *y, int64_t n);
void hr_quant_q2_K(const float *x, hr_block_q2_K *y, int64_t n);
void hr_quant_q3_K(const float *x, hr_block_q3_K *y, int64_t n);
void hr_quant_q4_K(const float *x, hr_block_q4_K *y, int64_t n);
void hr_quant_q5_K(const float *x, hr_block_q5_K *y, int64_t n);
void hr_quant_q6_K(const float *x, hr_block_q6_K *y, int64_t n);
void hr_quant_q8_K(const float *x, hr_block_q8_K *y, int64_t n);
void hr_quant_iq4_xs(const float *x, hr_block_iq4_xs *y, int64_t n);

#endif
