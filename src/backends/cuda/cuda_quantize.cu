/* Activation preparation for Q8_0 and Q4_0 weights: x quantized to Q8_0 blocks with the
 * CPU's rule (hr_prep_q8_0_scalar), so integer dot products match it block for block. */
#include "cuda_internal.h"
#include "cuda_numerics.cuh"

#define PREP_WARPS 8

/* One warp per 32-element block: lane j quantizes element j. */
__global__ void __launch_bounds__(PREP_WARPS * 32) k_prep_q8(const float *x, int64_t n_blocks, char *dst) {
    const int lane = threadIdx.x & 31;
    for (int64_t b = (int64_t)blockIdx.x * PREP_WARPS + (threadIdx.x >> 5); b < n_blocks;
         b += (int64_t)gridDim.x * PREP_WARPS) {
        const float v = x[b * 32 + lane];
        float amax = fabsf(v);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        char *out = dst + b * HR_CU_Q8_BYTES;
        if (lane == 0) *(uint16_t *)out = hr_cu_f2h(d);
        const float r = rintf(v * id); /* ties to even, as the CPU's round_even */
        ((int8_t *)(out + 2))[lane] = (int8_t)(r > 127.f ? 127 : r < -128.f ? -128 : (int)r);
    }
}

int hr_cu_prep_q8(const hr_cuda *c, const float *x, int64_t n_blocks, char *dst, hr_err *e) {
    HR_CU_LAUNCH(k_prep_q8, hr_cu_blocks(n_blocks, PREP_WARPS), PREP_WARPS * 32, 0, c->stream)(x, n_blocks, dst);
    return hr_cu_launched("matmul: activation quantization", e);
}

cudaError_t hr_cu_load_quantize(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_prep_q8);
    return st;
}
