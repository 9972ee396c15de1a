/* Weight types with ggml's exact ids and block layouts, so files move freely
 * between Hearth and llama.cpp. Conversions and reference (de)quantizers. */
#ifndef HR_TYPES_H
#define HR_TYPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum hr_type {
    HR_F32 = 0,
    HR_F16 = 1,
    HR_Q4_0 = 2,
    HR_Q4_1 = 3,
    HR_Q5_0 = 6,
    HR_Q5_1 = 7,
    HR_Q8_0 = 8,
    HR_Q8_1 = 9,   /* activation type of Q4_1/Q5_1 products; not a weight type */
    HR_Q2_K = 10,
    HR_Q3_K = 11,
    HR_Q4_K = 12,
    HR_Q5_K = 13,
    HR_Q6_K = 14,
    HR_Q8_K = 15,  /* activation type of the K-quant and IQ4_XS products; not a weight type */
    HR_I32_OLD = 18, /* old ggml I32 id, used by PowerInfer's GPU index */
    HR_IQ4_NL = 20,
    HR_IQ4_XS = 23,
    HR_I8 = 24,
    HR_I16 = 25,
    HR_I32 = 26,
    HR_BF16 = 30,
    HR_MXFP4 = 39,
    HR_TYPE_MAX = 40 /* table size; ids above are unknown */
} hr_type;

#define HR_QK 32   /* elements per block of the legacy types, IQ4_NL and MXFP4 */
#define HR_QK_K 256 /* elements per super-block of the K-quants, Q8_K and IQ4_XS */

/* Scales are F16 bit patterns (uint16_t) unless said otherwise. In the 32-element types the
 * low nibble of qs[j] is x[j] and the high nibble x[j+16]; a fifth bit j of qh is x[j]'s. */
typedef struct { uint16_t d; int8_t qs[HR_QK]; } hr_block_q8_0;       /* 34 bytes */
typedef struct { uint16_t d; uint8_t qs[HR_QK / 2]; } hr_block_q4_0;  /* 18 bytes: value (q-8)*d */
typedef struct { uint16_t d, m; uint8_t qs[HR_QK / 2]; } hr_block_q4_1;              /* 20: q*d + m */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[HR_QK / 2]; } hr_block_q5_0;  /* 22: (q-16)*d */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[HR_QK / 2]; } hr_block_q5_1; /* 24: q*d + m */
typedef struct { uint16_t d, s; int8_t qs[HR_QK]; } hr_block_q8_1;   /* 36: s = d * sum(qs) */
typedef struct { uint16_t d; uint8_t qs[HR_QK / 2]; } hr_block_iq4_nl; /* 18: d * kvalues_iq4nl[q] */
typedef struct { uint8_t e; uint8_t qs[HR_QK / 2]; } hr_block_mxfp4;  /* 17: E8M0 scale, E2M1 values */
/* K-quants: a super-block of 256 in sub-blocks of 16 or 32, each with a quantized scale. */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } hr_block_q2_K;  /* 84 */
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } hr_block_q3_K; /* 110 */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } hr_block_q4_K; /* 144 */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } hr_block_q5_K; /* 176 */
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } hr_block_q6_K; /* 210 */
typedef struct { float d; int8_t qs[HR_QK_K]; int16_t bsums[HR_QK_K / 16]; } hr_block_q8_K; /* 292 */
typedef struct { uint16_t d, scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } hr_block_iq4_xs; /* 136 */

/* The 16 levels of IQ4_NL/IQ4_XS and the doubled E2M1 values of MXFP4 (ggml's tables). */
extern const int8_t hr_kvalues_iq4nl[16];
extern const int8_t hr_kvalues_mxfp4[16];
/* MXFP4's E8M0 scale halved (the values table is doubled): 2^(e-128), exact. */
float hr_e8m0_to_f32_half(uint8_t e);
/* Scale and min j (0..7) of a Q4_K/Q5_K super-block's 12 packed 6-bit fields. */
void hr_k4_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m);

/* Properties; unknown ids give block 0 / name NULL. */
bool hr_type_known(uint32_t t);
const char *hr_type_name(uint32_t t);          /* "f32", "f16", "q4_0", "q4_k", "iq4_xs", "mxfp4", ... */
const char *hr_type_ggml_name(uint32_t t);    /* ggml's name of an id Hearth does not read, else NULL */
int hr_type_from_name(const char *name);       /* -1 if unknown; case-insensitive */
uint64_t hr_type_block_elems(uint32_t t);      /* 1 for plain types, 32 or 256 for block types */
uint64_t hr_type_block_bytes(uint32_t t);
/* Bytes of n elements (n must be a multiple of the block), 0 on bad input or overflow. */
uint64_t hr_row_bytes(uint32_t t, uint64_t n);
bool hr_type_is_weight(uint32_t t);            /* the float and quantized types a weight may have */
bool hr_type_is_quant(uint32_t t);             /* a block type (quantized), weight or activation */

/* Scalar conversions, bit-exact with ggml (round to nearest even, NaN kept). F16 to F32 is
 * inline: the attention reads F16 KV-cache entries through it one element at a time. */
static inline float hr_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t u;
    float f;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13); /* Inf/NaN keep their payload */
    } else if (exp == 0) {
        f = (float)man * 0x1p-24f; /* subnormal (or zero): exactly man * 2^-24 */
        memcpy(&u, &f, 4);
        u |= sign;
    } else {
        u = sign | ((exp + 112) << 23) | (man << 13);
    }
    memcpy(&f, &u, 4);
    return f;
}
uint16_t hr_f32_to_f16(float f);
float hr_bf16_to_f32(uint16_t h);
uint16_t hr_f32_to_bf16(float f);

/* Row conversions; n a multiple of the block size. Quantizers match ggml's reference
 * quantize_row_*_ref bit for bit; dequantization matches ggml's dequantize_row_*.
 * Dequantizing a type without a dequantizer (integer types aside) writes nothing. */
void hr_dequant_row(uint32_t t, const void *src, float *dst, int64_t n);
void hr_quant_row(uint32_t t, const float *src, void *dst, int64_t n);

/* What llama.cpp's file quantizer (llama_model_quantize, without an importance matrix)
 * writes for a row: hr_quant_row's bytes, except IQ4_NL, where it searches more scales than
 * ggml's row reference. Files Hearth writes use this one. */
void hr_quant_row_file(uint32_t t, const float *src, void *dst, int64_t n);

/* Per-type dequantizers of the block types other than Q8_0/Q4_0 (dequant.c). Return false
 * for a type they do not hold. */
bool hr_dequant_row_blocks(uint32_t t, const void *src, float *dst, int64_t n);
/* Reference quantizers of those types (quant_legacy.c, quant_k.c), bit-exact with ggml. */
bool hr_quant_row_blocks(uint32_t t, const float *src, void *dst, int64_t n);

#endif
