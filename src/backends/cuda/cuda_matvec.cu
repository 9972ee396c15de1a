/* Matrix-vector products (decode, and batches of up to HR_CU_MMV_TOK tokens): one warp
 * per weight row, each row read once for all tokens of the batch. Lanes split a row into
 * coalesced pieces (8 elements by 16-byte loads for float types, 4 bytes of a block for
 * quantized ones); the warp's partial sums are reduced by shuffles. */
#include "cuda_internal.h"
#include "cuda_numerics.cuh"

#define MMV_WARPS 4
#define TOK HR_CU_MMV_TOK

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Eight consecutive weights starting at element 8*c of a 16-byte aligned row. */
template <int T> __device__ __forceinline__ void load8(const char *row, int64_t c, float w[8]) {
    if (T == HR_F32) {
        const float4 a = ((const float4 *)row)[2 * c], b = ((const float4 *)row)[2 * c + 1];
        w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
    } else {
        const uint4 u = ((const uint4 *)row)[c];
        const uint32_t p[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint16_t lo = (uint16_t)(p[j] & 0xffff), hi = (uint16_t)(p[j] >> 16);
            w[2 * j] = T == HR_F16 ? hr_cu_h2f(lo) : hr_cu_bf2f(lo);
            w[2 * j + 1] = T == HR_F16 ? hr_cu_h2f(hi) : hr_cu_bf2f(hi);
        }
    }
}

template <int T> __device__ void row_float(const hr_cu_mm &m, const char *row, int lane, float *acc) {
    const int64_t n = m.n_in;
    int64_t k0 = 0;
    if (m.vec) {
        const int64_t n8 = n / 8;
        for (int64_t c = lane; c < n8; c += 32) {
            float w[8];
            load8<T>(row, c, w);
#pragma unroll
            for (int t = 0; t < TOK; t++) {
                if (t >= m.n_tok) break;
                const float4 *x4 = (const float4 *)(m.X + t * n) + 2 * c;
                const float4 a = x4[0], b = x4[1];
                const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
                for (int j = 0; j < 8; j++) acc[t] += w[j] * hr_cu_prep<T>(x[j]);
            }
        }
        k0 = n8 * 8;
    }
    for (int64_t k = k0 + lane; k < n; k += 32) {
        const float w = hr_cu_weight<T>(row, k);
#pragma unroll
        for (int t = 0; t < TOK; t++) {
            if (t >= m.n_tok) break;
            acc[t] += w * hr_cu_prep<T>(m.X[t * n + k]);
        }
    }
}

/* Q8_0: 8 lanes per block, 4 quants each; per lane (float)isum * (dw * dx) as the CPU. */
__device__ void row_q8(const hr_cu_mm &m, const char *row, int lane, float *acc) {
    const int64_t nb = m.n_in / 32;
    const int j = (lane & 7) * 4;
    for (int64_t b = lane >> 3; b < nb; b += 4) {
        const char *wb = row + b * HR_CU_Q8_BYTES;
        const int w = hr_cu_i32_2(wb + 2 + j);
        const float dw = hr_cu_h2f(hr_cu_u16(wb));
#pragma unroll
        for (int t = 0; t < TOK; t++) {
            if (t >= m.n_tok) break;
            const char *xb = m.Xq + (t * nb + b) * HR_CU_Q8_BYTES;
            const int s = __dp4a(w, hr_cu_i32_2(xb + 2 + j), 0);
            acc[t] += (float)s * (dw * hr_cu_h2f(hr_cu_u16(xb)));
        }
    }
}

/* Q4_0: 4 lanes per block; a lane's 4 bytes hold elements j..j+3 (low nibbles) and
 * j+16..j+19 (high); sum (q - 8) x = sum q x - 8 sum x. */
__device__ void row_q4(const hr_cu_mm &m, const char *row, int lane, float *acc) {
    const int64_t nb = m.n_in / 32;
    const int j = (lane & 3) * 4;
    for (int64_t b = lane >> 2; b < nb; b += 8) {
        const char *wb = row + b * HR_CU_Q4_BYTES;
        const int w = hr_cu_i32_2(wb + 2 + j);
        const int lo = w & 0x0f0f0f0f, hi = (w >> 4) & 0x0f0f0f0f;
        const float dw = hr_cu_h2f(hr_cu_u16(wb));
#pragma unroll
        for (int t = 0; t < TOK; t++) {
            if (t >= m.n_tok) break;
            const char *xb = m.Xq + (t * nb + b) * HR_CU_Q8_BYTES;
            const int xl = hr_cu_i32_2(xb + 2 + j), xh = hr_cu_i32_2(xb + 2 + 16 + j);
            const int sx = __dp4a(0x01010101, xl, __dp4a(0x01010101, xh, 0));
            const int s = __dp4a(lo, xl, __dp4a(hi, xh, 0)) - 8 * sx;
            acc[t] += (float)s * (dw * hr_cu_h2f(hr_cu_u16(xb)));
        }
    }
}

/* The newer block types (cuda_dequant.cuh): F32 activations against the exactly
 * dequantized weights; each lane takes 4 consecutive elements (one scale group) per step,
 * so a warp covers 128 consecutive elements and its X reads are coalesced. */
template <int T> __device__ void row_dq(const hr_cu_mm &m, const char *row, int lane, float *acc) {
    const int64_t n = m.n_in;
    for (int64_t k = 4 * lane; k < n; k += 128) {
        float w[4];
        hr_cu_dq4<T>(row, k, w);
#pragma unroll
        for (int t = 0; t < TOK; t++) {
            if (t >= m.n_tok) break;
            const float *x = m.X + t * n + k;
#pragma unroll
            for (int j = 0; j < 4; j++) acc[t] += w[j] * x[j];
        }
    }
}

template <int T> __global__ void __launch_bounds__(MMV_WARPS * 32) k_mmv(const hr_cu_mm m) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * MMV_WARPS + (threadIdx.x >> 5);
    if (r >= m.n_rows) return; /* whole warps leave together */
    const int64_t wr = m.idx ? (int64_t)m.idx[r] : r;
    float acc[TOK];
#pragma unroll
    for (int t = 0; t < TOK; t++) acc[t] = 0.0f;
    const bool ok = wr >= 0 && wr < m.n_out;
    bool needed = !m.need;
    for (int t = 0; t < m.n_tok && !needed; t++) needed = m.need[t * m.n_rows + r] != 0; /* uniform over the warp */
    if (ok && needed) {
        const char *row = m.W + wr * (int64_t)m.row_bytes;
        if (T == HR_Q8_0) row_q8(m, row, lane, acc);
        else if (T == HR_Q4_0) row_q4(m, row, lane, acc);
        else if (hr_cu_is_dq(T)) row_dq<T>(m, row, lane, acc);
        else row_float<T>(m, row, lane, acc);
    }
#pragma unroll
    for (int t = 0; t < TOK; t++) {
        if (t >= m.n_tok) break;
        const float v = warp_sum(acc[t]);
        if (lane == 0) m.Y[t * m.n_rows + r] = m.need && !m.need[t * m.n_rows + r] ? 0.0f : ok ? v : __int_as_float(0x7fc00000);
    }
}

int hr_cu_launch_mmv(const hr_cuda *c, uint32_t type, const hr_cu_mm *m, hr_err *e) {
    const unsigned blocks = (unsigned)((m->n_rows + MMV_WARPS - 1) / MMV_WARPS);
    cudaStream_t s = c->stream;
    switch (type) {
    case HR_F32: HR_CU_LAUNCH(k_mmv<HR_F32>, blocks, MMV_WARPS * 32, 0, s)(*m); break;
    case HR_F16: HR_CU_LAUNCH(k_mmv<HR_F16>, blocks, MMV_WARPS * 32, 0, s)(*m); break;
    case HR_BF16: HR_CU_LAUNCH(k_mmv<HR_BF16>, blocks, MMV_WARPS * 32, 0, s)(*m); break;
    case HR_Q8_0: HR_CU_LAUNCH(k_mmv<HR_Q8_0>, blocks, MMV_WARPS * 32, 0, s)(*m); break;
    case HR_Q4_0: HR_CU_LAUNCH(k_mmv<HR_Q4_0>, blocks, MMV_WARPS * 32, 0, s)(*m); break;
#define MMV_CASE(T) case T: HR_CU_LAUNCH(k_mmv<T>, blocks, MMV_WARPS * 32, 0, s)(*m); break;
        HR_CU_DQ_TYPES(MMV_CASE)
#undef MMV_CASE
    default: return hr_errf(e, "cuda matmul: weight type %u is not supported", (unsigned)type);
    }
    return hr_cu_launched("matmul (matrix-vector kernel)", e);
}

cudaError_t hr_cu_load_matvec(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_mmv<HR_F32>);
    HR_CU_LOAD(st, k_mmv<HR_F16>);
    HR_CU_LOAD(st, k_mmv<HR_BF16>);
    HR_CU_LOAD(st, k_mmv<HR_Q8_0>);
    HR_CU_LOAD(st, k_mmv<HR_Q4_0>);
#define MMV_LOAD(T) HR_CU_LOAD(st, k_mmv<T>);
    HR_CU_DQ_TYPES(MMV_LOAD)
#undef MMV_LOAD
    return st;
}
