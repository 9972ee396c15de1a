/* rmsnorm with the CPU's numerics: squares rounded to F32 and summed in double, then
 * scale = 1 / sqrtf((float)(sum / n) + eps) and y = (x * scale) * w. One block per
 * token; the block's partial sums are added in a fixed tree order. */
#include "cuda_internal.h"

#define NORM_THREADS 256

__global__ void __launch_bounds__(NORM_THREADS) k_rmsnorm(const float *X, const float *w, int64_t n, float eps, float *Y) {
    __shared__ double part[NORM_THREADS];
    const float *x = X + (int64_t)blockIdx.x * n;
    float *y = Y + (int64_t)blockIdx.x * n;
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += NORM_THREADS) s += (double)__fmul_rn(x[i], x[i]);
    part[threadIdx.x] = s;
    __syncthreads();
    for (int o = NORM_THREADS / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    const float scale = 1.0f / sqrtf((float)(part[0] / (double)n) + eps);
    for (int64_t i = threadIdx.x; i < n; i += NORM_THREADS) y[i] = __fmul_rn(__fmul_rn(x[i], scale), w[i]);
}

int hr_cu_rmsnorm(hr_dev *d, uint64_t X, uint64_t w, int64_t n, int64_t n_tok, float eps, uint64_t Y, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "rmsnorm";
    if (n <= 0 || n_tok < 0 || n_tok > INT32_MAX) return hr_errf(e, "cuda rmsnorm: bad sizes n=%lld n_tok=%lld",
                                                               (long long)n, (long long)n_tok);
    if (n_tok == 0) return 0;
    if (X % 4 || Y % 4 || w % 4) return hr_errf(e, "cuda rmsnorm: X, w and Y must be 4-byte aligned");
    if ((uint64_t)n_tok > UINT64_MAX / 4 / (uint64_t)n) return hr_errf(e, "cuda rmsnorm: size overflow");
    const uint64_t bytes = (uint64_t)n * (uint64_t)n_tok * 4;
    if (hr_cu_span(c, X, bytes, op, "X", e) || hr_cu_span(c, Y, bytes, op, "Y", e) ||
        hr_cu_span(c, w, (uint64_t)n * 4, op, "w", e) || hr_cu_enter(c, op, e))
        return -1;
    HR_CU_LAUNCH(k_rmsnorm, (unsigned)n_tok, NORM_THREADS, 0, c->stream)(hr_cu_at<const float>(c, X), hr_cu_at<const float>(c, w),
                                                               n, eps, hr_cu_at<float>(c, Y));
    return hr_cu_launched(op, e);
}

cudaError_t hr_cu_load_norm(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_rmsnorm);
    return st;
}
