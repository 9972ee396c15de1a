/* Reference quantizers of the 32-element block types: Q4_1, Q5_0, Q5_1, Q8_1, IQ4_NL, MXFP4.
 * Byte for byte as ggml's quantize_row_*_ref (what llama-quantize uses without an importance
 * matrix): same float operations in the same order, same truncations. Where ggml converts an
 * out-of-range float to an integer (NaN or Inf in the input) C leaves the result undefined;
 * here those conversions go through hr_qtrunc, which is total, so bad input gives garbage
 * levels but never undefined behaviour. Layouts: types.h. */
#include <float.h>
#include <math.h>

#include "quant_internal.h"

/* The low byte of a truncated conversion, as ggml's (int8_t)(float) casts produce it. */
static int8_t trunc_i8(float v) { return (int8_t)(uint8_t)(uint32_t)hr_qtrunc(v); }
static uint8_t trunc_u8(float v) { return (uint8_t)(uint32_t)hr_qtrunc(v); }

static void min_max(const float *x, float *mn, float *mx) {
    float lo = FLT_MAX, hi = -FLT_MAX; /* NaN never wins a comparison, so it is skipped */
    for (int j = 0; j < HR_QK; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *mn = lo, *mx = hi;
}

/* The value of largest magnitude with its sign (the first on ties), as Q4_0 picks it. */
static float signed_max(const float *x) {
    float amax = 0, max = 0;
    for (int j = 0; j < HR_QK; j++)
        if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
    return max;
}

/* Fifth bits: bit j of qh is element j's (j < 16) or element j's of the upper half. */
static void put_qh(uint8_t qh[4], uint32_t bits) {
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(bits >> (8 * k));
}

void hr_quant_q4_1(const float *x, hr_block_q4_1 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        float mn, mx;
        min_max(x, &mn, &mx);
        const float d = (mx - mn) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = hr_f32_to_f16(d);
        y[i].m = hr_f32_to_f16(mn);
        for (int j = 0; j < HR_QK / 2; j++) {
            const int8_t a = trunc_i8((x[j] - mn) * id + 0.5f), b = trunc_i8((x[j + 16] - mn) * id + 0.5f);
            const uint8_t q0 = (uint8_t)(a < 15 ? a : 15), q1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void hr_quant_q5_0(const float *x, hr_block_q5_0 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        const float d = signed_max(x) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = hr_f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < HR_QK / 2; j++) {
            const int8_t a = trunc_i8(x[j] * id + 16.5f), b = trunc_i8(x[j + 16] * id + 16.5f);
            const uint8_t q0 = (uint8_t)(a < 31 ? a : 31), q1 = (uint8_t)(b < 31 ? b : 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | (q1 & 0x0F) << 4);
            qh |= (uint32_t)((q0 >> 4) & 1) << j | (uint32_t)((q1 >> 4) & 1) << (j + 16);
        }
        put_qh(y[i].qh, qh);
    }
}

void hr_quant_q5_1(const float *x, hr_block_q5_1 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        float mn, mx;
        min_max(x, &mn, &mx);
        const float d = (mx - mn) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = hr_f32_to_f16(d);
        y[i].m = hr_f32_to_f16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < HR_QK / 2; j++) {
            const uint8_t q0 = trunc_u8((x[j] - mn) * id + 0.5f), q1 = trunc_u8((x[j + 16] - mn) * id + 0.5f);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | (q1 & 0x0F) << 4);
            qh |= (uint32_t)((q0 >> 4) & 1) << j | (uint32_t)((q1 >> 4) & 1) << (j + 16);
        }
        put_qh(y[i].qh, qh);
    }
}

void hr_quant_q8_1(const float *x, hr_block_q8_1 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        float amax = 0.0f;
        for (int j = 0; j < HR_QK; j++) {
            const float a = fabsf(x[j]);
            amax = amax > a ? amax : a;
        }
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = hr_f32_to_f16(d);
        int sum = 0;
        for (int j = 0; j < HR_QK; j++) {
            y[i].qs[j] = trunc_i8(roundf(x[j] * id)); /* half away from zero, unlike the K types */
            sum += y[i].qs[j];
        }
        /* s lets a Q4_1/Q5_1 product add the min term without touching the levels. */
        y[i].s = hr_f32_to_f16(sum * d);
    }
}

void hr_quant_iq4_nl(const float *x, hr_block_iq4_nl *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        uint8_t L[HR_QK];
        /* An all-zero block keeps these (ggml leaves them unset): the level nearest zero. */
        memset(L, 8, sizeof L);
        /* No further tries: the reference keeps the levels of the first guess and only
         * refits the scale to them. */
        const float d = hr_qsearch_iq4(x, L, -1);
        y[i].d = hr_f32_to_f16(d);
        for (int j = 0; j < HR_QK / 2; j++) y[i].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}

/* llama.cpp quantizes files through ggml_quantize_chunk, which for IQ4_NL (only) is not the
 * row reference above: it tries 15 more scales per block (ntry = 7, as IQ4_XS does) and then
 * re-picks every level at the chosen scale. */
void hr_quant_iq4_nl_file(const float *x, hr_block_iq4_nl *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        uint8_t L[HR_QK];
        memset(L, 8, sizeof L);
        const float d = hr_qsearch_iq4(x, L, 7);
        const float id2 = 2 * (d ? 1 / d : 0.0f); /* doubled: hr_iq4_index_2v */
        y[i].d = hr_f32_to_f16(d);
        for (int j = 0; j < HR_QK; j++) L[j] = (uint8_t)hr_iq4_index_2v(id2 * x[j]);
        for (int j = 0; j < HR_QK / 2; j++) y[i].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}

/* Nearest of MXFP4's 16 doubled E2M1 values at half-scale e; the first on ties. */
static uint8_t mxfp4_index(float v, float e) {
    int best = 0;
    float best_err = fabsf(hr_kvalues_mxfp4[0] * e - v);
    for (int k = 1; k < 16; k++) {
        const float err = fabsf(hr_kvalues_mxfp4[k] * e - v);
        if (err < best_err) best = k, best_err = err;
    }
    return (uint8_t)best;
}

void hr_quant_mxfp4(const float *x, hr_block_mxfp4 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        float amax = 0.0f;
        for (int j = 0; j < HR_QK; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        /* Shared exponent: the largest magnitude lands in [4, 8) times 2^(e-127), i.e. on
         * E2M1's top binade. log2f (not an exact exponent read) as the reference does: just
         * below a power of two it rounds up, and the bytes must agree. */
        const uint8_t e = amax > 0.0f ? trunc_u8(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = hr_e8m0_to_f32_half(e);
        y[i].e = e;
        for (int j = 0; j < HR_QK / 2; j++)
            y[i].qs[j] = (uint8_t)(mxfp4_index(x[j], d) | mxfp4_index(x[j + 16], d) << 4);
    }
}
