/* Matrix-matrix products for prompt batches: a block computes a tile of 64 weight rows x
 * 32 tokens, so each weight loaded into shared memory serves 32 tokens. The K dimension
 * advances one 32-element block at a time. Quantized weights stay integers: each output
 * accumulates (float)isum * (dw * dx) per block in block order with separate multiply
 * and add, exactly the CPU's scalar dot product. Float types accumulate in F32, and so do
 * the newer block types (cuda_dequant.cuh): their weights enter the float tile dequantized
 * exactly, against F32 activations. */
#include "cuda_internal.h"
#include "cuda_numerics.cuh"

#define TILE_R 64
#define TILE_T 32
#define TILE_THREADS 256

/* Thread layout of the compute phase: 4 rows x 2 tokens per thread. */
#define ROWS_PER 4
#define TOKS_PER 2

__device__ __forceinline__ const char *tile_row(const hr_cu_mm &m, int64_t r, bool *ok) {
    if (r >= m.n_rows) {
        *ok = true; /* padding row: never stored */
        return NULL;
    }
    const int64_t wr = m.idx ? (int64_t)m.idx[r] : r;
    *ok = wr >= 0 && wr < m.n_out;
    return *ok ? m.W + wr * (int64_t)m.row_bytes : NULL;
}

__device__ __forceinline__ void tile_store(const hr_cu_mm &m, int64_t r0, int64_t t0, float acc[ROWS_PER][TOKS_PER]) {
    const int cr = (threadIdx.x / 16) * ROWS_PER, ct = (threadIdx.x % 16) * TOKS_PER;
#pragma unroll
    for (int i = 0; i < ROWS_PER; i++)
#pragma unroll
        for (int j = 0; j < TOKS_PER; j++) {
            const int64_t r = r0 + cr + i, t = t0 + ct + j;
            if (r < m.n_rows && t < m.n_tok) m.Y[t * m.n_rows + r] = acc[i][j];
        }
}

template <int T> __global__ void __launch_bounds__(TILE_THREADS) k_mm_float(const hr_cu_mm m) {
    __shared__ float ws[TILE_R][33];
    __shared__ float xs[TILE_T][33];
    __shared__ bool bad[TILE_R];
    const int tid = threadIdx.x;
    const int64_t r0 = (int64_t)blockIdx.x * TILE_R, t0 = (int64_t)blockIdx.y * TILE_T;
    const int lr = tid / 4, lk = (tid % 4) * 8; /* loads: 64 rows x 4 pieces of 8 */
    bool ok;
    const char *wrow = tile_row(m, r0 + lr, &ok);
    if (tid % 4 == 0) bad[lr] = !ok;
    const int xt = tid / 8, xk = (tid % 8) * 4; /* loads: 32 tokens x 8 pieces of 4 */
    const float *xrow = t0 + xt < m.n_tok ? m.X + (t0 + xt) * m.n_in : NULL;
    const int cr = (tid / 16) * ROWS_PER, ct = (tid % 16) * TOKS_PER;
    float acc[ROWS_PER][TOKS_PER] = {};
    for (int64_t k0 = 0; k0 < m.n_in; k0 += 32) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int64_t k = k0 + lk + j;
            ws[lr][lk + j] = wrow && k < m.n_in ? hr_cu_weight<T>(wrow, k) : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int64_t k = k0 + xk + j;
            xs[xt][xk + j] = xrow && k < m.n_in ? hr_cu_prep<T>(xrow[k]) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < 32; kk++) {
            float w[ROWS_PER], x[TOKS_PER];
#pragma unroll
            for (int i = 0; i < ROWS_PER; i++) w[i] = ws[cr + i][kk];
#pragma unroll
            for (int j = 0; j < TOKS_PER; j++) x[j] = xs[ct + j][kk];
#pragma unroll
            for (int i = 0; i < ROWS_PER; i++)
#pragma unroll
                for (int j = 0; j < TOKS_PER; j++) acc[i][j] += w[i] * x[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < ROWS_PER; i++)
        if (bad[cr + i])
            for (int j = 0; j < TOKS_PER; j++) acc[i][j] = __int_as_float(0x7fc00000);
    tile_store(m, r0, t0, acc);
}

/* Loads this thread's quarter of a weight block as 8-bit integers (two 32-bit words). */
template <int T> __device__ __forceinline__ void load_wq(const char *wrow, int64_t b, int part, int *w0, int *w1,
                                                         int *slot0, int *slot1, float *d) {
    if (T == HR_Q8_0) {
        const char *blk = wrow + b * HR_CU_Q8_BYTES;
        *w0 = hr_cu_i32_2(blk + 2 + part * 8);
        *w1 = hr_cu_i32_2(blk + 2 + part * 8 + 4);
        *slot0 = part * 2, *slot1 = part * 2 + 1;
        *d = hr_cu_h2f(hr_cu_u16(blk));
    } else {
        const char *blk = wrow + b * HR_CU_Q4_BYTES;
        const int w = hr_cu_i32_2(blk + 2 + part * 4);
        /* bytes q - 8 in -8..7: low nibbles are elements 4p.., high ones 16 + 4p.. */
        *w0 = (int)__vsub4((unsigned)(w & 0x0f0f0f0f), 0x08080808u);
        *w1 = (int)__vsub4((unsigned)((w >> 4) & 0x0f0f0f0f), 0x08080808u);
        *slot0 = part, *slot1 = 4 + part;
        *d = hr_cu_h2f(hr_cu_u16(blk));
    }
}

template <int T> __global__ void __launch_bounds__(TILE_THREADS) k_mm_quant(const hr_cu_mm m) {
    __shared__ int wq[TILE_R][9];
    __shared__ float wd[TILE_R];
    __shared__ int xq[TILE_T][9];
    __shared__ float xd[TILE_T];
    __shared__ bool bad[TILE_R];
    const int tid = threadIdx.x;
    const int64_t r0 = (int64_t)blockIdx.x * TILE_R, t0 = (int64_t)blockIdx.y * TILE_T;
    const int64_t nb = m.n_in / 32;
    const int lr = tid / 4, part = tid % 4; /* loads: 64 rows x 4 quarters of a block */
    bool ok;
    const char *wrow = tile_row(m, r0 + lr, &ok);
    if (part == 0) bad[lr] = !ok;
    const int xt = tid / 4; /* threads below 128 load 32 tokens x 4 quarters */
    const char *xrow = tid < 128 && t0 + xt < m.n_tok ? m.Xq + (t0 + xt) * nb * HR_CU_Q8_BYTES : NULL;
    const int cr = (tid / 16) * ROWS_PER, ct = (tid % 16) * TOKS_PER;
    float acc[ROWS_PER][TOKS_PER] = {};
    for (int64_t b = 0; b < nb; b++) {
        int w0 = 0, w1 = 0, s0 = part * 2, s1 = part * 2 + 1;
        float d = 0.0f;
        if (wrow) load_wq<T>(wrow, b, part, &w0, &w1, &s0, &s1, &d);
        else if (T == HR_Q4_0) s0 = part, s1 = 4 + part;
        wq[lr][s0] = w0, wq[lr][s1] = w1;
        if (part == 0) wd[lr] = d;
        if (tid < 128) {
            const char *blk = xrow ? xrow + b * HR_CU_Q8_BYTES : NULL;
            xq[xt][part * 2] = blk ? hr_cu_i32_2(blk + 2 + part * 8) : 0;
            xq[xt][part * 2 + 1] = blk ? hr_cu_i32_2(blk + 2 + part * 8 + 4) : 0;
            if (part == 0) xd[xt] = blk ? hr_cu_h2f(hr_cu_u16(blk)) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < ROWS_PER; i++)
#pragma unroll
            for (int j = 0; j < TOKS_PER; j++) {
                int s = 0;
#pragma unroll
                for (int q = 0; q < 8; q++) s = __dp4a(wq[cr + i][q], xq[ct + j][q], s);
                acc[i][j] = __fadd_rn(acc[i][j], __fmul_rn((float)s, __fmul_rn(wd[cr + i], xd[ct + j])));
            }
        __syncthreads();
    }
    for (int i = 0; i < ROWS_PER; i++)
        if (bad[cr + i])
            for (int j = 0; j < TOKS_PER; j++) acc[i][j] = __int_as_float(0x7fc00000);
    tile_store(m, r0, t0, acc);
}

int hr_cu_launch_mmtile(const hr_cuda *c, uint32_t type, const hr_cu_mm *m, hr_err *e) {
    const int64_t ty = (m->n_tok + TILE_T - 1) / TILE_T;
    if (ty > 65535) return hr_errf(e, "cuda matmul: %lld tokens in one call is too many", (long long)m->n_tok);
    const dim3 grid((unsigned)((m->n_rows + TILE_R - 1) / TILE_R), (unsigned)ty);
    cudaStream_t s = c->stream;
    switch (type) {
    case HR_F32: HR_CU_LAUNCH(k_mm_float<HR_F32>, grid, TILE_THREADS, 0, s)(*m); break;
    case HR_F16: HR_CU_LAUNCH(k_mm_float<HR_F16>, grid, TILE_THREADS, 0, s)(*m); break;
    case HR_BF16: HR_CU_LAUNCH(k_mm_float<HR_BF16>, grid, TILE_THREADS, 0, s)(*m); break;
    case HR_Q8_0: HR_CU_LAUNCH(k_mm_quant<HR_Q8_0>, grid, TILE_THREADS, 0, s)(*m); break;
    case HR_Q4_0: HR_CU_LAUNCH(k_mm_quant<HR_Q4_0>, grid, TILE_THREADS, 0, s)(*m); break;
        /* the newer block types: F32 tiles of the dequantized weights against F32 X */
#define TILE_CASE(T) case T: HR_CU_LAUNCH(k_mm_float<T>, grid, TILE_THREADS, 0, s)(*m); break;
        HR_CU_DQ_TYPES(TILE_CASE)
#undef TILE_CASE
    default: return hr_errf(e, "cuda matmul: weight type %u is not supported", (unsigned)type);
    }
    return hr_cu_launched("matmul (tiled kernel)", e);
}

cudaError_t hr_cu_load_mmtile(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_mm_float<HR_F32>);
    HR_CU_LOAD(st, k_mm_float<HR_F16>);
    HR_CU_LOAD(st, k_mm_float<HR_BF16>);
    HR_CU_LOAD(st, k_mm_quant<HR_Q8_0>);
    HR_CU_LOAD(st, k_mm_quant<HR_Q4_0>);
#define TILE_LOAD(T) HR_CU_LOAD(st, k_mm_float<T>);
    HR_CU_DQ_TYPES(TILE_LOAD)
#undef TILE_LOAD
    return st;
}
