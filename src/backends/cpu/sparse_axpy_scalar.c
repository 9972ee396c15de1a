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
    static void axpy_##NAME(int64_t n, int n_rows, const void *const *w, const float *a,          \
                            int64_t n_tok, float *y, size_t ys) {                                 \
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

static const hr_axpy_kernels ax_scalar = {
    .name = "scalar",
    .axpy = {[HR_F32] = axpy_f32, [HR_F16] = axpy_f16, [HR_BF16] = axpy_bf16, [HR_Q8_0] = axpy_q8_0,
             [HR_Q4_0] = axpy_q4_0},
};

const hr_axpy_kernels *hr_axpy_table_scalar(void) { return &ax_scalar; }
