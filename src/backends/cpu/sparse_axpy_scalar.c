/* Plain-C axpy kernels: the reference twins of the SIMD ones. Each weight is
 * dequantized exactly as hr_dequant_row does (q * d is exact in F32), then
 * y += a * w with a separate multiply and add. */
#include <string.h>

#include "sparse_axpy_impl.h"

static float w_f32(const void *w, int64_t k) {
    float f;
    memcpy(&f, (const char *)w + 4 * k, 4); /* rows need not be 4-byte aligned */
    return f;
}
static uint16_t u16(const void *w, int64_t k) {
    uint16_t h;
    memcpy(&h, (const char *)w + 2 * k, 2);
    return h;
}
static float w_f16(const void *w, int64_t k) { return hr_f16_to_f32(u16(w, k)); }
static float w_bf16(const void *w, int64_t k) { return hr_bf16_to_f32(u16(w, k)); }
static float w_q8_0(const void *w, int64_t k) {
    const hr_block_q8_0 *b = (const hr_block_q8_0 *)w + k / HR_QK;
    return b->qs[k % HR_QK] * hr_f16_to_f32(b->d);
}
static float w_q4_0(const void *w, int64_t k) {
    const hr_block_q4_0 *b = (const hr_block_q4_0 *)w + k / HR_QK;
    const int j = (int)(k % HR_QK);
    const int q = j < HR_QK / 2 ? (b->qs[j] & 0x0f) : (b->qs[j - HR_QK / 2] >> 4);
    return (q - 8) * hr_f16_to_f32(b->d);
}

#define AXPY_SCALAR(NAME, WV)                                                                     \
    static void axpy_##NAME(int64_t n, int n_rows, const void *const *w, const void *const *next, \
                            const float *a, int64_t n_tok, float *y, size_t ys) {                 \
        (void)next;                                                                               \
        for (int64_t t = 0; t < n_tok; t++)                                                       \
            for (int r = 0; r < n_rows; r++) {                                                    \
                const float at = a[t * HR_AXPY_ROWS + r];                                         \
                if (at == 0.0f) continue;                                                         \
                float *yt = y + t * ys;                                                           \
                for (int64_t k = 0; k < n; k++) yt[k] = yt[k] + at * WV(w[r], k);                 \
            }                                                                                     \
    }

AXPY_SCALAR(f32, w_f32)
AXPY_SCALAR(f16, w_f16)
AXPY_SCALAR(bf16, w_bf16)
AXPY_SCALAR(q8_0, w_q8_0)
AXPY_SCALAR(q4_0, w_q4_0)

/* The newer block types: each row's block is dequantized by hr_dequant_row itself into
 * a stack buffer (so the values are its own), then applied to every token in row order. */
static void axpy_blocks(uint32_t type, int64_t n, int n_rows, const void *const *w, const float *a, int64_t n_tok,
                        float *y, size_t ys) {
    const int64_t be = (int64_t)hr_type_block_elems(type);
    const size_t bb = hr_type_block_bytes(type);
    float buf[HR_AXPY_ROWS][HR_QK_K];
    for (int64_t b = 0; b < n / be; b++) {
        for (int r = 0; r < n_rows; r++) hr_dequant_row(type, (const char *)w[r] + b * bb, buf[r], be);
        for (int64_t t = 0; t < n_tok; t++)
            for (int r = 0; r < n_rows; r++) {
                const float at = a[t * HR_AXPY_ROWS + r];
                if (at == 0.0f) continue;
                float *yt = y + t * ys + b * be;
                for (int64_t k = 0; k < be; k++) yt[k] = yt[k] + at * buf[r][k];
            }
    }
}

#define AXPY_BLOCKS(NAME, TYPE)                                                                   \
    static void axpy_##NAME(int64_t n, int n_rows, const void *const *w, const void *const *next, \
                            const float *a, int64_t n_tok, float *y, size_t ys) {                 \
        (void)next;                                                                               \
        axpy_blocks(TYPE, n, n_rows, w, a, n_tok, y, ys);                                         \
    }

AXPY_BLOCKS(q4_1, HR_Q4_1)
AXPY_BLOCKS(q5_0, HR_Q5_0)
AXPY_BLOCKS(q5_1, HR_Q5_1)
AXPY_BLOCKS(iq4_nl, HR_IQ4_NL)
AXPY_BLOCKS(mxfp4, HR_MXFP4)
AXPY_BLOCKS(q2_K, HR_Q2_K)
AXPY_BLOCKS(q3_K, HR_Q3_K)
AXPY_BLOCKS(q4_K, HR_Q4_K)
AXPY_BLOCKS(q5_K, HR_Q5_K)
AXPY_BLOCKS(q6_K, HR_Q6_K)
AXPY_BLOCKS(iq4_xs, HR_IQ4_XS)

static const hr_axpy_kernels ax_scalar = {
    .name = "scalar",
    .axpy = {[HR_F32] = axpy_f32, [HR_F16] = axpy_f16, [HR_BF16] = axpy_bf16, [HR_Q8_0] = axpy_q8_0,
             [HR_Q4_0] = axpy_q4_0, [HR_Q4_1] = axpy_q4_1, [HR_Q5_0] = axpy_q5_0, [HR_Q5_1] = axpy_q5_1,
             [HR_IQ4_NL] = axpy_iq4_nl, [HR_MXFP4] = axpy_mxfp4, [HR_Q2_K] = axpy_q2_K, [HR_Q3_K] = axpy_q3_K,
             [HR_Q4_K] = axpy_q4_K, [HR_Q5_K] = axpy_q5_K, [HR_Q6_K] = axpy_q6_K, [HR_IQ4_XS] = axpy_iq4_xs},
};

const hr_axpy_kernels *hr_axpy_table_scalar(void) { return &ax_scalar; }
