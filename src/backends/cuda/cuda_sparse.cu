/* sparse_axpy: Y[t][k] = sum over i of A[t][i] * Wt[idx[i]][k], deterministic without
 * atomics. Each thread owns one output column for up to AX_TOK tokens and walks its share
 * of the index list in order, skipping zero coefficients (as the CPU does). Long index
 * lists are cut into a number of splits fixed by n_idx alone; their partial sums go to
 * the scratch and are added in split order, so results depend on the shape only. */
#include "cuda_internal.h"
#include "cuda_numerics.cuh"

#define AX_THREADS 128
#define AX_TOK 8
#define AX_MAX_SPLITS 16
#define AX_ROWS_PER_SPLIT 256

typedef struct ax_args {
    const char *W;
    size_t row_bytes;
    int64_t n_cols, n_rows; /* Wt: n_rows rows of n_cols */
    const int32_t *idx;
    int64_t n_idx, per;     /* per: indices per split */
    const float *A;         /* [n_tok][n_idx] */
    int64_t n_tok;
    float *out;             /* splits == 1: Y [n_tok][n_cols]; else partials [split][n_tok][n_cols] */
} ax_args;

template <int T> __global__ void __launch_bounds__(AX_THREADS) k_axpy(const ax_args a) {
    const int64_t k = (int64_t)blockIdx.x * AX_THREADS + threadIdx.x;
    const int64_t t0 = (int64_t)blockIdx.y * AX_TOK;
    const int nt = (int)(a.n_tok - t0 < AX_TOK ? a.n_tok - t0 : AX_TOK);
    const int64_t i0 = (int64_t)blockIdx.z * a.per;
    const int64_t i1 = i0 + a.per < a.n_idx ? i0 + a.per : a.n_idx;
    if (k >= a.n_cols) return;
    float acc[AX_TOK];
#pragma unroll
    for (int t = 0; t < AX_TOK; t++) acc[t] = 0.0f;
    for (int64_t i = i0; i < i1; i++) {
        float av[AX_TOK];
        bool any = false;
#pragma unroll
        for (int t = 0; t < AX_TOK; t++) {
            av[t] = t < nt ? a.A[(t0 + t) * a.n_idx + i] : 0.0f;
            any |= av[t] != 0.0f;
        }
        if (!any) continue; /* the row is not read at all */
        const int64_t r = a.idx[i];
        const float w = r >= 0 && r < a.n_rows ? hr_cu_weight<T>(a.W + r * (int64_t)a.row_bytes, k)
                                               : __int_as_float(0x7fc00000);
#pragma unroll
        for (int t = 0; t < AX_TOK; t++)
            if (av[t] != 0.0f) acc[t] = __fadd_rn(acc[t], __fmul_rn(av[t], w));
    }
    float *out = a.out + (int64_t)blockIdx.z * a.n_tok * a.n_cols;
    for (int t = 0; t < nt; t++) out[(t0 + t) * a.n_cols + k] = acc[t];
}

__global__ void k_axpy_sum(const float *part, int splits, int64_t n, float *y) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float s = part[i];
        for (int z = 1; z < splits; z++) s = __fadd_rn(s, part[z * n + i]);
        y[i] = s;
    }
}

static int ax_launch(const hr_cuda *c, uint32_t type, const ax_args *a, int splits, hr_err *e) {
    const dim3 grid((unsigned)((a->n_cols + AX_THREADS - 1) / AX_THREADS), (unsigned)((a->n_tok + AX_TOK - 1) / AX_TOK),
                    (unsigned)splits);
    cudaStream_t s = c->stream;
    switch (type) {
    case HR_F32: HR_CU_LAUNCH(k_axpy<HR_F32>, grid, AX_THREADS, 0, s)(*a); break;
    case HR_F16: HR_CU_LAUNCH(k_axpy<HR_F16>, grid, AX_THREADS, 0, s)(*a); break;
    case HR_BF16: HR_CU_LAUNCH(k_axpy<HR_BF16>, grid, AX_THREADS, 0, s)(*a); break;
    case HR_Q8_0: HR_CU_LAUNCH(k_axpy<HR_Q8_0>, grid, AX_THREADS, 0, s)(*a); break;
    case HR_Q4_0: HR_CU_LAUNCH(k_axpy<HR_Q4_0>, grid, AX_THREADS, 0, s)(*a); break;
        /* the newer block types: hr_cu_weight dequantizes each element (cuda_dequant.cuh) */
#define AX_CASE(T) case T: HR_CU_LAUNCH(k_axpy<T>, grid, AX_THREADS, 0, s)(*a); break;
        HR_CU_DQ_TYPES(AX_CASE)
#undef AX_CASE
    default: return hr_errf(e, "cuda sparse_axpy: weight type %u is not supported", (unsigned)type);
    }
    return hr_cu_launched("sparse_axpy", e);
}

int hr_cu_sparse_axpy(hr_dev *d, const hr_dmat *Wt, uint64_t A, int64_t n_tok, uint64_t idx, int64_t n_idx,
                      uint64_t Y, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    const char *op = "sparse_axpy";
    if (hr_cu_check_mat(c, Wt, op, e)) return -1;
    if (n_tok < 0 || n_idx < 0 || n_idx > INT32_MAX) return hr_errf(e, "cuda sparse_axpy: bad sizes");
    if (n_tok == 0) return 0;
    if (n_tok > 65535LL * AX_TOK) return hr_errf(e, "cuda sparse_axpy: %lld tokens in one call is too many", (long long)n_tok);
    if (A % 4 || Y % 4 || idx % 4) return hr_errf(e, "cuda sparse_axpy: A, idx and Y must be 4-byte aligned");
    const uint64_t n_cols = (uint64_t)Wt->n_in;
    if ((uint64_t)n_tok > UINT64_MAX / 4 / n_cols || (n_idx && (uint64_t)n_tok > UINT64_MAX / 4 / (uint64_t)n_idx))
        return hr_errf(e, "cuda sparse_axpy: size overflow");
    if (hr_cu_span(c, Y, (uint64_t)n_tok * n_cols * 4, op, "Y", e) ||
        (n_idx && (hr_cu_span(c, A, (uint64_t)n_tok * n_idx * 4, op, "A", e) ||
                   hr_cu_span(c, idx, (uint64_t)n_idx * 4, op, "idx", e))) ||
        hr_cu_enter(c, op, e))
        return -1;
    int splits = (int)((n_idx + AX_ROWS_PER_SPLIT - 1) / AX_ROWS_PER_SPLIT);
    splits = splits < 1 ? 1 : splits > AX_MAX_SPLITS ? AX_MAX_SPLITS : splits;
    /* Tokens per launch when partials must fit the scratch. */
    int64_t chunk = splits == 1 ? n_tok : (int64_t)(HR_CU_SCRATCH_BYTES / ((uint64_t)splits * n_cols * 4));
    if (chunk < 1) splits = 1, chunk = n_tok;
    ax_args a = {};
    a.W = hr_cu_at<const char>(c, Wt->off);
    a.row_bytes = Wt->row_bytes;
    a.n_cols = (int64_t)n_cols;
    a.n_rows = Wt->n_out;
    a.idx = hr_cu_at<const int32_t>(c, idx);
    a.n_idx = n_idx;
    a.per = (n_idx + splits - 1) / splits;
    for (int64_t t0 = 0; t0 < n_tok; t0 += chunk) {
        a.n_tok = n_tok - t0 < chunk ? n_tok - t0 : chunk;
        a.A = hr_cu_at<const float>(c, A) + t0 * n_idx;
        float *y = hr_cu_at<float>(c, Y) + t0 * (int64_t)n_cols;
        a.out = splits == 1 ? y : (float *)c->scratch;
        if (ax_launch(c, Wt->type, &a, splits, e)) return -1;
        if (splits > 1) {
            const int64_t n = a.n_tok * (int64_t)n_cols;
            HR_CU_LAUNCH(k_axpy_sum, hr_cu_blocks(n, 256), 256, 0, c->stream)((const float *)c->scratch, splits, n, y);
            if (hr_cu_launched("sparse_axpy (sum of splits)", e)) return -1;
        }
    }
    return 0;
}

cudaError_t hr_cu_load_sparse(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_axpy<HR_F32>);
    HR_CU_LOAD(st, k_axpy<HR_F16>);
    HR_CU_LOAD(st, k_axpy<HR_BF16>);
    HR_CU_LOAD(st, k_axpy<HR_Q8_0>);
    HR_CU_LOAD(st, k_axpy<HR_Q4_0>);
#define AX_LOAD(T) HR_CU_LOAD(st, k_axpy<T>);
    HR_CU_DQ_TYPES(AX_LOAD)
#undef AX_LOAD
    HR_CU_LOAD(st, k_axpy_sum);
    return st;
}
