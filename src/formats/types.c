/* Weight type table and scalar conversions, following ggml's definitions so that
 * quantized bytes and converted values agree bit for bit with llama.cpp. */
#include "types.h"

#include <math.h>
#include <string.h>
#include <strings.h>

typedef struct {
    const char *name;
    uint16_t block_elems;
    uint16_t block_bytes;
    bool weight;
} type_info;

static const type_info k_types[HR_TYPE_MAX] = {
    [HR_F32] = {"f32", 1, 4, true},
    [HR_F16] = {"f16", 1, 2, true},
    [HR_Q4_0] = {"q4_0", HR_QK, sizeof(hr_block_q4_0), true},
    [HR_Q8_0] = {"q8_0", HR_QK, sizeof(hr_block_q8_0), true},
    [HR_Q4_1] = {"q4_1", HR_QK, sizeof(hr_block_q4_1), true},
    [HR_Q5_0] = {"q5_0", HR_QK, sizeof(hr_block_q5_0), true},
    [HR_Q5_1] = {"q5_1", HR_QK, sizeof(hr_block_q5_1), true},
    [HR_Q8_1] = {"q8_1", HR_QK, sizeof(hr_block_q8_1), false},
    [HR_Q2_K] = {"q2_k", HR_QK_K, sizeof(hr_block_q2_K), true},
    [HR_Q3_K] = {"q3_k", HR_QK_K, sizeof(hr_block_q3_K), true},
    [HR_Q4_K] = {"q4_k", HR_QK_K, sizeof(hr_block_q4_K), true},
    [HR_Q5_K] = {"q5_k", HR_QK_K, sizeof(hr_block_q5_K), true},
    [HR_Q6_K] = {"q6_k", HR_QK_K, sizeof(hr_block_q6_K), true},
    [HR_Q8_K] = {"q8_k", HR_QK_K, sizeof(hr_block_q8_K), false},
    [HR_IQ4_NL] = {"iq4_nl", HR_QK, sizeof(hr_block_iq4_nl), true},
    [HR_IQ4_XS] = {"iq4_xs", HR_QK_K, sizeof(hr_block_iq4_xs), true},
    [HR_MXFP4] = {"mxfp4", HR_QK, sizeof(hr_block_mxfp4), true},
    [HR_I32_OLD] = {"i32", 1, 4, false},
    [HR_I8] = {"i8", 1, 1, false},
    [HR_I16] = {"i16", 1, 2, false},
    [HR_I32] = {"i32", 1, 4, false},
    [HR_BF16] = {"bf16", 1, 2, true},
};

_Static_assert(sizeof(hr_block_q8_0) == 34, "Q8_0 block must match ggml");
_Static_assert(sizeof(hr_block_q4_0) == 18, "Q4_0 block must match ggml");
_Static_assert(sizeof(hr_block_q4_1) == 20 && sizeof(hr_block_q5_0) == 22 && sizeof(hr_block_q5_1) == 24 &&
               sizeof(hr_block_q8_1) == 36 && sizeof(hr_block_iq4_nl) == 18 && sizeof(hr_block_mxfp4) == 17,
               "32-element blocks must match ggml");
_Static_assert(sizeof(hr_block_q2_K) == 84 && sizeof(hr_block_q3_K) == 110 && sizeof(hr_block_q4_K) == 144 &&
               sizeof(hr_block_q5_K) == 176 && sizeof(hr_block_q6_K) == 210 && sizeof(hr_block_q8_K) == 292 &&
               sizeof(hr_block_iq4_xs) == 136,
               "super-blocks must match ggml");

bool hr_type_known(uint32_t t) { return t < HR_TYPE_MAX && k_types[t].name != NULL; }

const char *hr_type_name(uint32_t t) { return hr_type_known(t) ? k_types[t].name : NULL; }

/* ggml's names for the ids Hearth does not read, so a refusal names what the file holds.
 * 18 is I32 in PowerInfer's 2023 ggml (its GPU index) and IQ3_XXS in today's. */
const char *hr_type_ggml_name(uint32_t t) {
    static const char *const names[] = {
        [4] = "Q4_2 (removed from ggml)", [5] = "Q4_3 (removed from ggml)", [16] = "IQ2_XXS",
        [17] = "IQ2_XS", [18] = "IQ3_XXS", [19] = "IQ1_S", [21] = "IQ3_S", [22] = "IQ2_S",
        [27] = "I64", [28] = "F64", [29] = "IQ1_M", [31] = "Q4_0_4_4 (repacked, removed from ggml)",
        [32] = "Q4_0_4_8 (repacked, removed from ggml)", [33] = "Q4_0_8_8 (repacked, removed from ggml)",
        [34] = "TQ1_0", [35] = "TQ2_0", [36] = "IQ4_NL_4_4 (repacked, removed from ggml)",
        [37] = "IQ4_NL_4_8 (repacked, removed from ggml)", [38] = "IQ4_NL_8_8 (repacked, removed from ggml)",
        [40] = "NVFP4", [41] = "Q1_0", [42] = "Q2_0",
    };
    return t < sizeof names / sizeof names[0] ? names[t] : NULL;
}

int hr_type_from_name(const char *name) {
    if (!name) return -1;
    /* I32 has two ids; the name means the current one, so scan the modern id first. */
    if (strcasecmp(name, "i32") == 0) return HR_I32;
    for (int t = 0; t < HR_TYPE_MAX; t++)
        if (k_types[t].name && strcasecmp(name, k_types[t].name) == 0) return t;
    return -1;
}

uint64_t hr_type_block_elems(uint32_t t) { return hr_type_known(t) ? k_types[t].block_elems : 0; }
uint64_t hr_type_block_bytes(uint32_t t) { return hr_type_known(t) ? k_types[t].block_bytes : 0; }
bool hr_type_is_weight(uint32_t t) { return hr_type_known(t) && k_types[t].weight; }
bool hr_type_is_quant(uint32_t t) { return hr_type_known(t) && k_types[t].block_elems > 1; }

uint64_t hr_row_bytes(uint32_t t, uint64_t n) {
    if (!hr_type_known(t)) return 0;
    uint64_t be = k_types[t].block_elems, bb = k_types[t].block_bytes;
    if (n % be) return 0;
    uint64_t nb = n / be;
    if (nb > UINT64_MAX / bb) return 0;
    return nb * bb;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }


/* Round to nearest even, as ggml_compute_fp32_to_fp16: the scaling trick makes the FPU do
 * the rounding (including into subnormals); NaN becomes the quiet NaN 0x7e00 with its sign. */
uint16_t hr_f32_to_f16(float f) {
    float base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
    uint32_t w = f2u(f), shl1_w = w + w, sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xff000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = u2f((bias >> 1) + 0x07800000u) + base;
    uint32_t bits = f2u(base);
    uint32_t exp_bits = (bits >> 13) & 0x00007c00u, man_bits = bits & 0x00000fffu;
    uint32_t nonsign = exp_bits + man_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

float hr_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

/* ggml_compute_fp32_to_bf16: NaN -> quiet NaN (bit 6 of the bf16 set), else RNE. */
uint16_t hr_f32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

/* The int8 conversion of a rounded quant, defined for every input: finite in-range values
 * convert as a cast does (so bytes equal ggml's), out-of-range saturate, NaN (from NaN or
 * Inf weights) becomes 0. ggml leaves those cases undefined. */
static int8_t sat_i8(float v) {
    if (v != v) return 0;
    if (v >= 127.0f) return 127;
    if (v <= -128.0f) return -128;
    return (int8_t)v;
}

static void quant_q8_0_ref(const float *x, hr_block_q8_0 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        float amax = 0.0f;
        for (int j = 0; j < HR_QK; j++) {
            float a = fabsf(x[j]);
            amax = amax > a ? amax : a;
        }
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = hr_f32_to_f16(d);
        for (int j = 0; j < HR_QK; j++) y[i].qs[j] = sat_i8(roundf(x[j] * id));
    }
}

static void quant_q4_0_ref(const float *x, hr_block_q4_0 *y, int64_t n) {
    for (int64_t i = 0; i < n / HR_QK; i++, x += HR_QK) {
        float amax = 0.0f, max = 0.0f; /* max keeps the sign of the largest magnitude */
        for (int j = 0; j < HR_QK; j++) {
            if (amax < fabsf(x[j])) { amax = fabsf(x[j]); max = x[j]; }
        }
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = hr_f32_to_f16(d);
        for (int j = 0; j < HR_QK / 2; j++) {
            int8_t a = sat_i8(x[j] * id + 8.5f), b = sat_i8(x[j + HR_QK / 2] * id + 8.5f);
            uint8_t q0 = (uint8_t)(a < 15 ? a : 15), q1 = (uint8_t)(b < 15 ? b : 15);
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void hr_dequant_row(uint32_t t, const void *src, float *dst, int64_t n) {
    switch (t) {
    case HR_F32: memmove(dst, src, (size_t)n * sizeof(float)); break;
    case HR_F16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = hr_f16_to_f32(s[i]);
    } break;
    case HR_BF16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = hr_bf16_to_f32(s[i]);
    } break;
    case HR_Q8_0: {
        const hr_block_q8_0 *b = src;
        for (int64_t i = 0; i < n / HR_QK; i++) {
            const float d = hr_f16_to_f32(b[i].d);
            for (int j = 0; j < HR_QK; j++) dst[i * HR_QK + j] = b[i].qs[j] * d;
        }
    } break;
    case HR_Q4_0: {
        const hr_block_q4_0 *b = src;
        for (int64_t i = 0; i < n / HR_QK; i++) {
            const float d = hr_f16_to_f32(b[i].d);
            for (int j = 0; j < HR_QK / 2; j++) {
                dst[i * HR_QK + j] = ((b[i].qs[j] & 0x0f) - 8) * d;
                dst[i * HR_QK + j + HR_QK / 2] = ((b[i].qs[j] >> 4) - 8) * d;
            }
        }
    } break;
    case HR_I8: {
        const int8_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
    } break;
    case HR_I16: {
        const int16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
    } break;
    case HR_I32: case HR_I32_OLD: {
        const int32_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = (float)s[i];
    } break;
    default: hr_dequant_row_blocks(t, src, dst, n); break;
    }
}

void hr_quant_row(uint32_t t, const float *src, void *dst, int64_t n) {
    switch (t) {
    case HR_F32: memmove(dst, src, (size_t)n * sizeof(float)); break;
    case HR_F16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = hr_f32_to_f16(src[i]);
    } break;
    case HR_BF16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = hr_f32_to_bf16(src[i]);
    } break;
    case HR_Q8_0: quant_q8_0_ref(src, dst, n); break;
    case HR_Q4_0: quant_q4_0_ref(src, dst, n); break;
    default: hr_quant_row_blocks(t, src, dst, n); break;
    }
}
