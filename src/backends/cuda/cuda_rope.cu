/* RoPE with the CPU's numerics (hr_rope_ext): theta_scale = powf(base, -2/n_rot) and the
 * magnitude scale computed on the host (the same libm calls as the CPU), angles built by
 * repeated F32 multiplication from pos, divided by the pair's frequency factor, YaRN's ramp
 * mix and the rotation without fused multiply-adds. Positions travel by value in the
 * launch; the factors are read from the arena. */
#include <math.h>

#include "cuda_internal.h"

#define ROPE_THREADS 64

/* What hr_rope_ext adds to plain RoPE, resolved on the host. */
typedef struct rope_ext {
    const float *ff;   /* [n_rot/2] frequency divisors, NULL: none */
    float ext_factor;  /* 0: no YaRN mix */
    float corr0, span; /* ramp start and width (at least 0.001, as the CPU) */
    float mscale;      /* attn_factor, times YaRN's 1 + 0.1 ln(1/freq_scale) when mixing */
} rope_ext;

/* ggml's ramp as the CPU evaluates it: 1 below corr0, 0 beyond corr0 + span. */
__device__ __forceinline__ float yarn_ramp(const rope_ext &x, int p) {
    const float r = __fsub_rn((float)p, x.corr0) / x.span;
    return __fsub_rn(1.0f, r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r);
}

__global__ void __launch_bounds__(ROPE_THREADS) k_rope(float *X, const hr_cu_tokpos tp, int n_head, int head_dim, int n_rot,
                                                       float theta_scale, float freq_scale, int neox, const rope_ext x) {
    float *xs = X + (int64_t)blockIdx.x * n_head * head_dim;
    const int half = n_rot / 2;
    for (int p = threadIdx.x; p < half; p += ROPE_THREADS) {
        float theta = (float)tp.pos[blockIdx.x];
        for (int q = 0; q < p; q++) theta = __fmul_rn(theta, theta_scale);
        const float te = x.ff ? theta / x.ff[p] : theta;
        const float ti = __fmul_rn(freq_scale, te);
        float t = ti;
        if (x.ext_factor != 0.0f) {
            const float mix = __fmul_rn(yarn_ramp(x, p), x.ext_factor);
            t = __fadd_rn(__fmul_rn(ti, __fsub_rn(1.0f, mix)), __fmul_rn(te, mix));
        }
        const float cs = __fmul_rn(cosf(t), x.mscale), sn = __fmul_rn(sinf(t), x.mscale);
        const int a = neox ? p : 2 * p, b = neox ? p + half : 2 * p + 1;
        for (int h = 0; h < n_head; h++) {
            float *v = xs + (int64_t)h * head_dim;
            const float x0 = v[a], x1 = v[b];
            v[a] = __fsub_rn(__fmul_rn(x0, cs), __fmul_rn(x1, sn));
            v[b] = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, cs));
        }
    }
}

/* The kernel's view of ext (NULL: plain RoPE, a unit scale), with the CPU's float steps. */
static int resolve_ext(hr_cuda *c, const hr_dev_rope *ext, int32_t n_rot, float freq_scale, rope_ext *x, hr_err *e) {
    *x = rope_ext{NULL, 0.0f, 0.0f, 0.001f, 1.0f};
    if (!ext) return 0;
    if (ext->freq_factors != UINT64_MAX) {
        if (ext->freq_factors % 4) return hr_errf(e, "cuda rope: frequency factors must be 4-byte aligned");
        if (hr_cu_span(c, ext->freq_factors, (uint64_t)(n_rot / 2) * 4, "rope", "freq_factors", e)) return -1;
        x->ff = hr_cu_at<const float>(c, ext->freq_factors);
    }
    x->ext_factor = ext->ext_factor, x->corr0 = ext->corr_dims[0], x->mscale = ext->attn_factor;
    const float span = ext->corr_dims[1] - ext->corr_dims[0];
    x->span = span > 0.001f ? span : 0.001f;
    if (ext->ext_factor != 0.0f) x->mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale);
    return 0;
}

int hr_cu_rope(hr_dev *d, uint64_t X, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
               const int32_t *pos, float base, float freq_scale, bool neox, const hr_dev_rope *ext, hr_err *e) {
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
    rope_ext x;
    if (hr_cu_span(c, X, (uint64_t)n_tok * row, op, "X", e) || resolve_ext(c, ext, n_rot, freq_scale, &x, e) ||
        hr_cu_enter(c, op, e))
        return -1;
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    for (int64_t t0 = 0; t0 < n_tok; t0 += HR_CU_TOK_CHUNK) {
        const int nt = (int)(n_tok - t0 < HR_CU_TOK_CHUNK ? n_tok - t0 : HR_CU_TOK_CHUNK);
        hr_cu_tokpos tp = {};
        for (int t = 0; t < nt; t++) tp.pos[t] = pos[t0 + t];
        float *xt = hr_cu_at<float>(c, X) + t0 * (int64_t)n_head * head_dim;
        HR_CU_LAUNCH(k_rope, (unsigned)nt, ROPE_THREADS, 0, c->stream)(xt, tp, n_head, head_dim, n_rot, theta_scale, freq_scale,
                                                              neox ? 1 : 0, x);
        if (hr_cu_launched(op, e)) return -1;
    }
    return 0;
}

cudaError_t hr_cu_load_rope(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_rope);
    return st;
}
