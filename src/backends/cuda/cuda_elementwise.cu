/* ffn_act, apply_mask, add and add_bias: element-wise, with the CPU's activation formulas
 * (engine/ops.c), including ggml's F16-rounded tanh GELU. */
#include "cuda_internal.h"
#include "cuda_numerics.cuh"

#define EW_THREADS 256

__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }
__device__ __forceinline__ float relu(float v) { return v > 0.0f ? v : 0.0f; }

/* Evaluated in the CPU's order without fused multiply-adds, at the F16-rounded input. */
__device__ __forceinline__ float gelu(float v) {
    if (v <= -10.0f) return 0.0f;
    if (v >= 10.0f) return v;
    const float x = hr_cu_round_h(v);
    const float inner = __fadd_rn(1.0f, __fmul_rn(__fmul_rn(0.044715f, x), x));
    const float arg = __fmul_rn(__fmul_rn(0.79788456080286535587989211986876f, x), inner);
    return hr_cu_round_h(__fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanhf(arg))));
}

/* With a gate g, as the contract and the stand-in: SwiGLU silu(g) u, ReGLU relu(g) u,
 * dReLU relu(g) relu(u), ReLU relu(g) u, GELU gelu(g) u; without one (ReLU, GELU only),
 * act(u). */
__device__ __forceinline__ float act_one(int act, bool gated, float g, float u) {
    switch (act) {
    case 0: return __fmul_rn(silu(g), u);
    case 1: return __fmul_rn(relu(g), u);
    case 2: return __fmul_rn(relu(g), relu(u));
    case 3: return gated ? __fmul_rn(relu(g), u) : relu(u);
    default: return gated ? __fmul_rn(gelu(g), u) : gelu(u);
    }
}

__global__ void k_act(const float *G, const float *U, int64_t n, int act, float *H) {
    for (int64_t i = (int64_t)blockIdx.x * EW_THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * EW_THREADS)
        H[i] = act_one(act, G != NULL, G ? G[i] : 0.0f, U[i]);
}

__global__ void k_mask(float *A, const uint8_t *mask, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * EW_THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * EW_THREADS)
        if (mask[i] == 0) A[i] = 0.0f;
}

/* __fadd_rn: the CPU's add_into rounds once per element, so nothing may be fused here. */
__global__ void k_add(const float *X, int64_t n, float *Y) {
    for (int64_t i = (int64_t)blockIdx.x * EW_THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * EW_THREADS)
        Y[i] = __fadd_rn(Y[i], X[i]);
}

/* Row t of Y plus the bias: as the CPU's add_bias, one rounding per element. */
__global__ void k_add_bias(const float *b, int64_t n, int64_t total, float *Y) {
    for (int64_t i = (int64_t)blockIdx.x * EW_THREADS + threadIdx.x; i < total; i += (int64_t)gridDim.x * EW_THREADS)
        Y[i] = __fadd_rn(Y[i], b[i % n]);
}

int hr_cu_ffn_act(hr_dev *d, uint64_t G, uint64_t U, int64_t n, int act, uint64_t H, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "ffn_act";
    /* The kernel's cases follow enum hr_act: SWIGLU, REGLU, DRELU, RELU, GELU. */
    if (act < 0 || act > 4) return hr_errf(e, "cuda ffn_act: unknown activation %d", act);
    if (act <= 2 && G == UINT64_MAX) return hr_errf(e, "cuda ffn_act: activation %d needs a gate", act);
    if (n < 0) return hr_errf(e, "cuda ffn_act: negative size");
    if (n == 0) return 0;
    if (U % 4 || H % 4 || (G != UINT64_MAX && G % 4)) return hr_errf(e, "cuda ffn_act: G, U and H must be 4-byte aligned");
    if ((uint64_t)n > UINT64_MAX / 4) return hr_errf(e, "cuda ffn_act: size overflow");
    const uint64_t bytes = (uint64_t)n * 4;
    if (hr_cu_span(c, U, bytes, op, "U", e) || hr_cu_span(c, H, bytes, op, "H", e) ||
        (G != UINT64_MAX && hr_cu_span(c, G, bytes, op, "G", e)) || hr_cu_enter(c, op, e))
        return -1;
    const float *g = G == UINT64_MAX ? NULL : hr_cu_at<const float>(c, G);
    HR_CU_LAUNCH(k_act, hr_cu_blocks(n, EW_THREADS), EW_THREADS, 0, c->stream)(g, hr_cu_at<const float>(c, U), n, act,
                                                                      hr_cu_at<float>(c, H));
    return hr_cu_launched(op, e);
}

/* The CPU's hr_swiglu_oai in its order, each operation rounded alone (no contraction). */
__global__ void k_act_oai(const float *G, const float *U, int64_t n, float alpha, float limit, float *H) {
    for (int64_t i = (int64_t)blockIdx.x * EW_THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * EW_THREADS) {
        const float g = G[i], u = U[i];
        const float x = limit < g ? limit : g; /* a NaN gate passes through, as std::min's order */
        const float y = u < -limit ? -limit : u > limit ? limit : u;
        H[i] = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.0f, expf(__fmul_rn(alpha, -x)))), __fadd_rn(y, 1.0f));
    }
}

int hr_cu_swiglu_oai(hr_dev *d, uint64_t G, uint64_t U, int64_t n, float alpha, float limit, uint64_t H, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "swiglu_oai";
    if (n < 0) return hr_errf(e, "cuda swiglu_oai: negative size");
    if (n == 0) return 0;
    if (G % 4 || U % 4 || H % 4) return hr_errf(e, "cuda swiglu_oai: G, U and H must be 4-byte aligned");
    if ((uint64_t)n > UINT64_MAX / 4) return hr_errf(e, "cuda swiglu_oai: size overflow");
    const uint64_t bytes = (uint64_t)n * 4;
    if (hr_cu_span(c, G, bytes, op, "G", e) || hr_cu_span(c, U, bytes, op, "U", e) || hr_cu_span(c, H, bytes, op, "H", e) ||
        hr_cu_enter(c, op, e))
        return -1;
    HR_CU_LAUNCH(k_act_oai, hr_cu_blocks(n, EW_THREADS), EW_THREADS, 0, c->stream)(
        hr_cu_at<const float>(c, G), hr_cu_at<const float>(c, U), n, alpha, limit, hr_cu_at<float>(c, H));
    return hr_cu_launched(op, e);
}

int hr_cu_apply_mask(hr_dev *d, uint64_t A, uint64_t mask, int64_t n_tok, int64_t n, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "apply_mask";
    if (n_tok < 0 || n < 0) return hr_errf(e, "cuda apply_mask: negative size");
    if (n_tok == 0 || n == 0) return 0;
    if (A % 4) return hr_errf(e, "cuda apply_mask: A must be 4-byte aligned");
    if ((uint64_t)n_tok > UINT64_MAX / 4 / (uint64_t)n) return hr_errf(e, "cuda apply_mask: size overflow");
    const int64_t total = n_tok * n;
    if (hr_cu_span(c, A, (uint64_t)total * 4, op, "A", e) || hr_cu_span(c, mask, (uint64_t)total, op, "mask", e) ||
        hr_cu_enter(c, op, e))
        return -1;
    HR_CU_LAUNCH(k_mask, hr_cu_blocks(total, EW_THREADS), EW_THREADS, 0, c->stream)(hr_cu_at<float>(c, A),
                                                                           hr_cu_at<const uint8_t>(c, mask), total);
    return hr_cu_launched(op, e);
}

int hr_cu_add(hr_dev *d, uint64_t X, int64_t n, uint64_t Y, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "add";
    if (n < 0) return hr_errf(e, "cuda add: negative size");
    if (n == 0) return 0;
    if (X % 4 || Y % 4) return hr_errf(e, "cuda add: X and Y must be 4-byte aligned");
    if ((uint64_t)n > UINT64_MAX / 4) return hr_errf(e, "cuda add: size overflow");
    const uint64_t bytes = (uint64_t)n * 4;
    if (hr_cu_span(c, X, bytes, op, "X", e) || hr_cu_span(c, Y, bytes, op, "Y", e) || hr_cu_enter(c, op, e)) return -1;
    HR_CU_LAUNCH(k_add, hr_cu_blocks(n, EW_THREADS), EW_THREADS, 0, c->stream)(hr_cu_at<const float>(c, X), n,
                                                                      hr_cu_at<float>(c, Y));
    return hr_cu_launched(op, e);
}

int hr_cu_add_bias(hr_dev *d, uint64_t b, int64_t n, int64_t n_tok, uint64_t Y, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "add_bias";
    if (n < 0 || n_tok < 0) return hr_errf(e, "cuda add_bias: negative size");
    if (n == 0 || n_tok == 0) return 0;
    if (b % 4 || Y % 4) return hr_errf(e, "cuda add_bias: b and Y must be 4-byte aligned");
    if ((uint64_t)n_tok > UINT64_MAX / 4 / (uint64_t)n) return hr_errf(e, "cuda add_bias: size overflow");
    const int64_t total = n * n_tok;
    if (hr_cu_span(c, b, (uint64_t)n * 4, op, "b", e) || hr_cu_span(c, Y, (uint64_t)total * 4, op, "Y", e) ||
        hr_cu_enter(c, op, e))
        return -1;
    HR_CU_LAUNCH(k_add_bias, hr_cu_blocks(total, EW_THREADS), EW_THREADS, 0, c->stream)(hr_cu_at<const float>(c, b), n, total,
                                                                               hr_cu_at<float>(c, Y));
    return hr_cu_launched(op, e);
}

int hr_cu_probe(int index, hr_err *e) {
    cudaFuncAttributes fa;
    cudaError_t st = cudaFuncGetAttributes(&fa, k_mask);
    if (st == cudaSuccess) return 0;
    (void)cudaGetLastError();
    return hr_errf(e, "CUDA device %d: %s (this build has code for CUDA architectures %s)", index,
                   cudaGetErrorString(st), HR_CUDA_ARCHS);
}

/* FFN mode threshold's test on the device's gate values: |act(g)| > thr with act_one's
 * functions (silu, the F16-rounded GELU, relu), so only the gate product's summation
 * order and the device's expf/tanhf can differ from the host's decision. */
__device__ __forceinline__ float gate_mag(int act, float g) {
    switch (act) {
    case 0: return fabsf(silu(g));
    case 4: return fabsf(gelu(g));
    default: return relu(g);
    }
}

__global__ void k_thr_mask(const float *G, int64_t n, float thr, int act, uint8_t *M) {
    for (int64_t i = (int64_t)blockIdx.x * EW_THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * EW_THREADS)
        M[i] = gate_mag(act, G[i]) > thr;
}

int hr_cu_thr_mask(hr_dev *d, uint64_t G, int64_t n, float thr, int act, uint64_t MASK, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "thr_mask";
    if (act < 0 || act > 4) return hr_errf(e, "cuda thr_mask: unknown activation %d", act);
    if (n < 0) return hr_errf(e, "cuda thr_mask: negative size");
    if (n == 0) return 0;
    if (G % 4) return hr_errf(e, "cuda thr_mask: G must be 4-byte aligned");
    if ((uint64_t)n > UINT64_MAX / 4) return hr_errf(e, "cuda thr_mask: size overflow");
    if (hr_cu_span(c, G, (uint64_t)n * 4, op, "G", e) || hr_cu_span(c, MASK, (uint64_t)n, op, "mask", e) || hr_cu_enter(c, op, e))
        return -1;
    HR_CU_LAUNCH(k_thr_mask, hr_cu_blocks(n, EW_THREADS), EW_THREADS, 0, c->stream)(hr_cu_at<const float>(c, G), n, thr, act,
                                                                           hr_cu_at<uint8_t>(c, MASK));
    return hr_cu_launched(op, e);
}

cudaError_t hr_cu_load_elementwise(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_act);
    HR_CU_LOAD(st, k_mask);
    HR_CU_LOAD(st, k_add);
    HR_CU_LOAD(st, k_add_bias);
    HR_CU_LOAD(st, k_thr_mask);
    return st;
}
