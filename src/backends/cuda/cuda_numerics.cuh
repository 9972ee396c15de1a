/* Device-side conversions and loads shared by the kernels, with the CPU's rounding:
 * F16 and BF16 round to nearest even (as hr_f32_to_f16 / hr_f32_to_bf16 for finite
 * values), quantized weights dequantize to q * d exactly. */
#ifndef HR_CUDA_NUMERICS_CUH
#define HR_CUDA_NUMERICS_CUH
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda_internal.h"

#define HR_CU_Q8_BYTES 34 /* sizeof(hr_block_q8_0): d (F16), 32 x int8 */
#define HR_CU_Q4_BYTES 18 /* sizeof(hr_block_q4_0): d (F16), 16 bytes of nibbles */

__device__ __forceinline__ float hr_cu_h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t hr_cu_f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float hr_cu_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
__device__ __forceinline__ float hr_cu_round_h(float f) { return __half2float(__float2half_rn(f)); }
__device__ __forceinline__ float hr_cu_round_bf(float f) { return __bfloat162float(__float2bfloat16_rn(f)); }

/* Rows and blocks are 2-byte aligned only (34- and 18-byte blocks): read 16-bit halves. */
__device__ __forceinline__ uint16_t hr_cu_u16(const char *p) { return *(const uint16_t *)p; }
__device__ __forceinline__ int hr_cu_i32_2(const char *p) {
    const uint16_t *h = (const uint16_t *)p;
    return (int)((uint32_t)h[0] | ((uint32_t)h[1] << 16));
}

/* Element k of a weight row, dequantized exactly (hr_dequant_row semantics). */
template <int T> __device__ __forceinline__ float hr_cu_weight(const char *row, int64_t k);
template <> __device__ __forceinline__ float hr_cu_weight<HR_F32>(const char *row, int64_t k) {
    return ((const float *)row)[k];
}
template <> __device__ __forceinline__ float hr_cu_weight<HR_F16>(const char *row, int64_t k) {
    return hr_cu_h2f(((const uint16_t *)row)[k]);
}
template <> __device__ __forceinline__ float hr_cu_weight<HR_BF16>(const char *row, int64_t k) {
    return hr_cu_bf2f(((const uint16_t *)row)[k]);
}
template <> __device__ __forceinline__ float hr_cu_weight<HR_Q8_0>(const char *row, int64_t k) {
    const char *b = row + (k / 32) * HR_CU_Q8_BYTES;
    return (float)((const int8_t *)(b + 2))[k % 32] * hr_cu_h2f(hr_cu_u16(b));
}
template <> __device__ __forceinline__ float hr_cu_weight<HR_Q4_0>(const char *row, int64_t k) {
    const char *b = row + (k / 32) * HR_CU_Q4_BYTES;
    const int j = (int)(k % 32);
    const uint8_t byte = ((const uint8_t *)(b + 2))[j & 15];
    const int q = j < 16 ? (byte & 0x0f) : (byte >> 4);
    return (float)(q - 8) * hr_cu_h2f(hr_cu_u16(b));
}

/* The newer block types (Q4_1 ... IQ4_XS, MXFP4): hr_cu_weight specializations and more. */
#include "cuda_dequant.cuh"

/* An activation as the CPU prepares it for a float-type weight (F32 kept, F16 / BF16
 * rounded). */
template <int T> __device__ __forceinline__ float hr_cu_prep(float x) {
    return T == HR_F16 ? hr_cu_round_h(x) : T == HR_BF16 ? hr_cu_round_bf(x) : x;
}
#endif
