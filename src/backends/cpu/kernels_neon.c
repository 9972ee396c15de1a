/* NEON (AArch64) kernels. Quantized types: exact integer dot per block, then the
 * scalar reference's float arithmetic (sum += isum * (d_w * d_x)), so results equal
 * the scalar table's. Float types: four 4-lane accumulators and a scalar tail.
 * Activation preps are the scalar ones (identical bytes on every ISA). No tiles yet:
 * prompt batches go through vec_dot per pair. */
#include "kernels_impl.h"
#include "attn_v.h"

#if defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

static float hsum4x4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d) {
    return vaddvq_f32(vaddq_f32(vaddq_f32(a, b), vaddq_f32(c, d)));
}

static void dot_f32(int64_t n, float *s, const void *w, const void *x) {
    const float *a = w, *b = x;
    float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], vld1q_f32(a + i + 4 * k), vld1q_f32(b + i + 4 * k));
    float tail = 0;
    for (; i < n; i++) tail += a[i] * b[i];
    *s = hsum4x4(acc[0], acc[1], acc[2], acc[3]) + tail;
}

static float32x4_t ld_f16x4(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
static float32x4_t ld_bf16x4(const uint16_t *p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

static void dot_f16(int64_t n, float *s, const void *w, const void *x) {
    const uint16_t *a = w, *b = x;
    float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], ld_f16x4(a + i + 4 * k), ld_f16x4(b + i + 4 * k));
    float tail = 0;
    for (; i < n; i++) tail += hr_f16_to_f32(a[i]) * hr_f16_to_f32(b[i]);
    *s = hsum4x4(acc[0], acc[1], acc[2], acc[3]) + tail;
}

static void dot_bf16(int64_t n, float *s, const void *w, const void *x) {
    const uint16_t *a = w, *b = x;
    float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; k++) acc[k] = vfmaq_f32(acc[k], ld_bf16x4(a + i + 4 * k), ld_bf16x4(b + i + 4 * k));
    float tail = 0;
    for (; i < n; i++) tail += hr_bf16_to_f32(a[i]) * hr_bf16_to_f32(b[i]);
    *s = hsum4x4(acc[0], acc[1], acc[2], acc[3]) + tail;
}

/* sum of 16 int8 products, exact */
static int32x4_t mul16(int8x16_t a, int8x16_t b, int32x4_t acc) {
    int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
}

static void dot_q8_0(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q8_0 *a = w, *b = x;
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        int32x4_t acc = vdupq_n_s32(0);
        acc = mul16(vld1q_s8(a[i].qs), vld1q_s8(b[i].qs), acc);
        acc = mul16(vld1q_s8(a[i].qs + 16), vld1q_s8(b[i].qs + 16), acc);
        sum += (float)vaddvq_s32(acc) * (hr_f16_to_f32(a[i].d) * hr_f16_to_f32(b[i].d));
    }
    *s = sum;
}

static void dot_q4_0(int64_t n, float *s, const void *w, const void *x) {
    const hr_block_q4_0 *a = w;
    const hr_block_q8_0 *b = x;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const int8x16_t s8 = vdupq_n_s8(8);
    float sum = 0;
    for (int64_t i = 0; i < n / HR_QK; i++) {
        uint8x16_t q = vld1q_u8(a[i].qs);
        int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), s8);
        int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), s8);
        int32x4_t acc = mul16(lo, vld1q_s8(b[i].qs), vdupq_n_s32(0));
        acc = mul16(hi, vld1q_s8(b[i].qs + 16), acc);
        sum += (float)vaddvq_s32(acc) * (hr_f16_to_f32(a[i].d) * hr_f16_to_f32(b[i].d));
    }
    *s = sum;
}

static void prep_f32(const float *x, void *xq, int64_t n) { memcpy(xq, x, (size_t)n * 4); }

static const hr_kernels_ext k_neon = {
    .k = {
        .name = "neon",
        .attn_wsum = hr_attn_wsum_c,
        .attn_wsum_grp = hr_attn_wsum_grp_c,
        .vec_dot = {[HR_F32] = dot_f32, [HR_F16] = dot_f16, [HR_BF16] = dot_bf16,
                    [HR_Q8_0] = dot_q8_0, [HR_Q4_0] = dot_q4_0},
        .act_prep = {[HR_F32] = prep_f32, [HR_F16] = hr_prep_f16_scalar, [HR_BF16] = hr_prep_bf16_scalar,
                     [HR_Q8_0] = hr_prep_q8_0_scalar, [HR_Q4_0] = hr_prep_q8_0_scalar},
    },
};

const hr_kernels_ext *hr_kext_neon(void) { return &k_neon; }
#else
const hr_kernels_ext *hr_kext_neon(void) { return NULL; }
#endif
