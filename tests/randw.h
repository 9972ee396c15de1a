/* Random weight rows of any weight type for kernel tests. Float types: normal values
 * converted with hr_quant_row. Block types: random bytes (every bit pattern of quants,
 * packed scales and high bits is then exercised, not only what a quantizer writes) with
 * each block's F16 scale fields overwritten by finite moderate values, so dequantized
 * weights stay finite and of ordinary size. randw_poison then makes a row non-finite
 * through its scales alone (NaN F16 scales; MXFP4, whose E8M0 scale has no NaN, the
 * largest exponent with every value 6 -> +inf). Header-only: tests include it. */
#ifndef HR_TESTS_RANDW_H
#define HR_TESTS_RANDW_H
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "formats/types.h"
#include "testutil.h"

/* Byte offsets of a block's F16 scale fields (d, and dmin/m where the type has one);
 * returns how many (0 for float types; MXFP4's one-byte scale is handled apart). */
static inline int randw_scale_offsets(uint32_t t, size_t off[2]) {
    switch (t) {
    case HR_Q8_0: off[0] = offsetof(hr_block_q8_0, d); return 1;
    case HR_Q4_0: off[0] = offsetof(hr_block_q4_0, d); return 1;
    case HR_Q4_1: off[0] = offsetof(hr_block_q4_1, d), off[1] = offsetof(hr_block_q4_1, m); return 2;
    case HR_Q5_0: off[0] = offsetof(hr_block_q5_0, d); return 1;
    case HR_Q5_1: off[0] = offsetof(hr_block_q5_1, d), off[1] = offsetof(hr_block_q5_1, m); return 2;
    case HR_IQ4_NL: off[0] = offsetof(hr_block_iq4_nl, d); return 1;
    case HR_Q2_K: off[0] = offsetof(hr_block_q2_K, d), off[1] = offsetof(hr_block_q2_K, dmin); return 2;
    case HR_Q3_K: off[0] = offsetof(hr_block_q3_K, d); return 1;
    case HR_Q4_K: off[0] = offsetof(hr_block_q4_K, d), off[1] = offsetof(hr_block_q4_K, dmin); return 2;
    case HR_Q5_K: off[0] = offsetof(hr_block_q5_K, d), off[1] = offsetof(hr_block_q5_K, dmin); return 2;
    case HR_Q6_K: off[0] = offsetof(hr_block_q6_K, d); return 1;
    case HR_IQ4_XS: off[0] = offsetof(hr_block_iq4_xs, d); return 1;
    default: return 0;
    }
}

static inline void randw_put16(uint8_t *p, uint16_t h) { memcpy(p, &h, 2); }

/* One row of n elements of type t at dst; `scale` sizes the float values and the
 * block scales alike (weights of roughly unit size times scale). */
static inline void randw_row(uint32_t t, void *dst, int64_t n, float scale, hr_rng *r) {
    if (!hr_type_is_quant(t)) {
        float tmp[256];
        for (int64_t i0 = 0; i0 < n; i0 += 256) {
            const int64_t m = n - i0 < 256 ? n - i0 : 256;
            for (int64_t i = 0; i < m; i++) tmp[i] = scale * hr_rng_normal(r);
            hr_quant_row(t, tmp, (char *)dst + hr_row_bytes(t, (uint64_t)i0), m);
        }
        return;
    }
    const size_t bb = hr_type_block_bytes(t), nb = (size_t)(n / (int64_t)hr_type_block_elems(t));
    uint8_t *p = dst;
    for (size_t i = 0; i < nb * bb; i++) p[i] = (uint8_t)(hr_rng_next(r) >> 32);
    /* Scale per level: ~1/(largest quant x sub-scale) of the type, so weights are ~scale. */
    float unit = 1.0f / 16;
    if (t == HR_Q8_0) unit = 1.0f / 128;
    if (t == HR_IQ4_NL || t == HR_IQ4_XS) unit = 1.0f / 128;
    if (t == HR_Q3_K || t == HR_Q6_K || t == HR_IQ4_XS) unit /= 32; /* signed 6-bit sub-scales */
    if (t == HR_Q4_K || t == HR_Q5_K) unit /= 32;
    if (t == HR_Q2_K) unit /= 8;
    size_t off[2];
    const int ns = randw_scale_offsets(t, off);
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = p + b * bb;
        if (t == HR_MXFP4) { /* 2^(e-128) x values up to 12: e near 124 gives ~1 */
            blk[0] = (uint8_t)(120 + hr_rng_next(r) % 8);
            continue;
        }
        for (int s = 0; s < ns; s++) {
            float v = scale * unit * (0.25f + hr_rng_uniform(r));
            if (s == 0 && hr_rng_uniform(r) < 0.5f) v = -v; /* ggml's d may be negative */
            randw_put16(blk + off[s], hr_f32_to_f16(v));
        }
    }
}

/* Rows [0, n_rows) of a matrix with row_bytes rb. */
static inline void randw_mat(uint32_t t, void *dst, size_t rb, int64_t n, int64_t n_rows, hr_rng *r) {
    for (int64_t o = 0; o < n_rows; o++) randw_row(t, (char *)dst + o * rb, n, 0.25f + 2.0f * hr_rng_uniform(r), r);
}

/* Makes every weight of the row non-finite (see the top of the file). */
static inline void randw_poison(uint32_t t, void *row, int64_t n) {
    const uint16_t h_nan = 0x7e00, b_nan = 0x7fc0;
    const float f_nan = NAN;
    uint8_t *p = row;
    if (t == HR_F32)
        for (int64_t i = 0; i < n; i++) memcpy(p + 4 * i, &f_nan, 4);
    if (t == HR_F16 || t == HR_BF16)
        for (int64_t i = 0; i < n; i++) memcpy(p + 2 * i, t == HR_F16 ? &h_nan : &b_nan, 2);
    if (!hr_type_is_quant(t)) return;
    const size_t bb = hr_type_block_bytes(t), nb = (size_t)(n / (int64_t)hr_type_block_elems(t));
    size_t off[2];
    const int ns = randw_scale_offsets(t, off);
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = p + b * bb;
        if (t == HR_MXFP4) {
            blk[0] = 0xff; /* 2^127 ... */
            memset(blk + 1, 0x55, bb - 1); /* ... times 6 (index 5): +inf */
        }
        for (int s = 0; s < ns && s < 1; s++) randw_put16(blk + off[s], h_nan);
    }
}
#endif
