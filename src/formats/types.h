/* Weight types with ggml's exact ids and block layouts, so files move freely
 * between Hearth and llama.cpp. Conversions and reference (de)quantizers. */
#ifndef HR_TYPES_H
#define HR_TYPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hr_type {
    HR_F32 = 0,
    HR_F16 = 1,
    HR_Q4_0 = 2,
    HR_Q8_0 = 8,
    HR_I32_OLD = 18, /* old ggml I32 id, used by PowerInfer's GPU index */
    HR_I8 = 24,
    HR_I16 = 25,
    HR_I32 = 26,
    HR_BF16 = 30,
    HR_TYPE_MAX = 40 /* table size; ids above are unknown */
} hr_type;

#define HR_QK 32 /* elements per Q8_0 / Q4_0 block */

typedef struct { uint16_t d; int8_t qs[HR_QK]; } hr_block_q8_0;       /* 34 bytes */
typedef struct { uint16_t d; uint8_t qs[HR_QK / 2]; } hr_block_q4_0;  /* 18 bytes: low nibble = x[j], high = x[j+16], value (q-8)*d */

/* Properties; unknown ids give block 0 / name NULL. */
bool hr_type_known(uint32_t t);
const char *hr_type_name(uint32_t t);          /* "f32", "f16", "q4_0", "q8_0", "bf16", "i32", ... */
int hr_type_from_name(const char *name);       /* -1 if unknown; case-insensitive */
uint64_t hr_type_block_elems(uint32_t t);      /* 1 for plain types, 32 for Q8_0/Q4_0 */
uint64_t hr_type_block_bytes(uint32_t t);
/* Bytes of n elements (n must be a multiple of the block), 0 on bad input or overflow. */
uint64_t hr_row_bytes(uint32_t t, uint64_t n);
bool hr_type_is_weight(uint32_t t);            /* F32, F16, BF16, Q8_0, Q4_0 */

/* Scalar conversions, bit-exact with ggml (round to nearest even, NaN kept). */
float hr_f16_to_f32(uint16_t h);
uint16_t hr_f32_to_f16(float f);
float hr_bf16_to_f32(uint16_t h);
uint16_t hr_f32_to_bf16(float f);

/* Row conversions; n a multiple of the block size. Quantizers match ggml's reference
 * quantize_row_*_ref bit for bit. */
void hr_dequant_row(uint32_t t, const void *src, float *dst, int64_t n);
void hr_quant_row(uint32_t t, const float *src, void *dst, int64_t n);

#endif
