/* RoPE with the CPU's numerics: theta_scale = powf(base, -2/n_rot) computed on the host
 * (the same libm call as the CPU), angles built by repeated F32 multiplication from pos,
 * rotation without fused multiply-adds. Positions travel by value in the launch. */
#include <math.h>

#include "cuda_internal.h"

#define ROPE_THREADS 64

__global__ void __launch_bounds__(ROPE_THREADS) k_rope(float *X, const hr_cu_tokpos tp, int n_head, int head_dim, int n_rot,
                                                       float theta_scale, float freq_scale, int neox) {
    float *x = X + (int64_t)blockIdx.x * n_head * head_dim;
    const int half = n_rot / 2;
    for (int p = threadIdx.x; p < half; p += ROPE_THREADS) {
        float theta = (float)tp.pos[blockIdx.x];
        for (int q = 0; q < p; q++) theta = __fmul_rn(theta, theta_scale);
        const float t = __fmul_rn(freq_scale, theta);
        const float cs = cosf(t), sn = sinf(t);
        const int a = neox ? p : 2 * p, b = neox ? p + half : 2 * p + 1;
        for (int h = 0; h < n_head; h++) {
            float *v = x + (int64_t)h * head_dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
            v[b] = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
        }
    }
}

int hr_cu_rope(hr_dev *d, uint64_t X, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
               const int32_t *pos, float base, float freq_scale, bool neox, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "rope";
    if (n_tok < 0 || n_head <= 0 || head_dim <= 0 || n_rot < 0 || n_rot > head_dim || n_rot % 2)
        return hr_errf(e, "cuda rope: bad shape n_tok=%lld n_head=%d head_dim=%d n_rot=%d", (long long)n_tok, n_head,
                       head_dim, n_rot);
    if (n_tok == 0 || n_rot == 0) return 0;
    if (!pos) return hr_errf(e, "cuda rope: no positions");
    if (X % 4) return hr_errf(e, "cuda rope: X must be 4-byte aligned");
    const uint64_t row = (uint64_t)n_head * (uint64_t)head_dim * 4;
    if ((uint64_t)n_tok > UINT64_MAX / row) return hr_errf(e, "cuda rope: size overflow");
    if (hr_cu_span(c, X, (uint64_t)n_tok * row, op, "X", e) || hr_cu_enter(c, op, e)) return -1;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    for (int64_t t0 = 0; t0 < n_tok; t0 += HR_CU_TOK_CHUNK) {
        const int nt = (int)(n_tok - t0 < HR_CU_TOK_CHUNK ? n_tok - t0 : HR_CU_TOK_CHUNK);
        hr_cu_tokpos tp = {};
        for (int t = 0; t < nt; t++) tp.pos[t] = pos[t0 + t];
        float *x = hr_cu_at<float>(c, X) + t0 * (int64_t)n_head * head_dim;
        HR_CU_LAUNCH(k_rope, (unsigned)nt, ROPE_THREADS, 0, c->stream)(x, tp, n_head, head_dim, n_rot, theta_scale, freq_scale,
                                                              neox ? 1 : 0);
        if (hr_cu_launched(op, e)) return -1;
    }
    return 0;
}

cudaError_t hr_cu_load_rope(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_rope);
    return st;
}
