/* Internal to the CUDA backend: the device state behind hr_dev, error and bounds helpers,
 * and the operations each .cu file provides to the table in cuda_device.cu. */
#ifndef HR_CUDA_INTERNAL_H
#define HR_CUDA_INTERNAL_H
#include <cuda_runtime.h>

/* Kernel launches and dynamic shared memory go through these, so the same sources also
 * build against the CPU emulator in tests/cudaemu (HEARTH_CUDA_EMU) and run there. */
#ifdef HEARTH_CUDA_EMU
#define HR_CU_LAUNCH(kernel, grid, block, shm, stream) hr_emu_launch(kernel, grid, block, shm, stream)
#define HR_CU_DYN_SHARED(type, name) type *name = (type *)hr_emu_dyn_shared()
#else
#define HR_CU_LAUNCH(kernel, grid, block, shm, stream) kernel<<<grid, block, shm, stream>>>
#define HR_CU_DYN_SHARED(type, name) extern __shared__ type name[]
#endif

extern "C" {
#include "backends/device.h"
#include "formats/types.h"
}

/* Device-side scratch owned by the backend (prepared Q8_0 activations, sparse_axpy
 * partial sums), allocated at open and counted in overhead(). Ops that need more split
 * their work into pieces that fit, so no size ever fails for want of scratch. */
#define HR_CU_SCRATCH_BYTES (16ull << 20)

/* Host arrays (positions, sequences) travel to kernels by value, this many tokens per
 * launch: no staging buffer can then be overwritten before its copy has run. */
#define HR_CU_TOK_CHUNK 256

typedef struct hr_cu_tokpos {
    int32_t pos[HR_CU_TOK_CHUNK];
    int32_t seq[HR_CU_TOK_CHUNK];
} hr_cu_tokpos;

/* Async copies (copy_async) in flight at most: one event each, reused round-robin. */
#define HR_CU_COPY_RING 64

typedef struct hr_cuda {
    hr_dev dev; /* first member: ops receive &dev */
    int index;
    cudaStream_t stream;
    /* the copy stream: expert refills beside the compute stream; ticket t's completion is
     * event ev[(t - 1) % HR_CU_COPY_RING], recorded after its copy */
    cudaStream_t copy;
    cudaEvent_t ev[HR_CU_COPY_RING];
    uint64_t issued, landed;
    char *arena;
    uint64_t arena_bytes;
    char *scratch;
    uint64_t overhead;
} hr_cuda;

static inline hr_cuda *hr_cu(hr_dev *d) { return (hr_cuda *)d; }

/* "cuda <op>: <cudaGetErrorString>", returns -1. */
int hr_cu_fail(hr_err *e, const char *op, cudaError_t st);
/* Makes the device current (a process may hold several); -1 with a message on failure. */
int hr_cu_enter(hr_cuda *c, const char *op, hr_err *e);
/* Checks that [off, off + bytes) lies in the reserved arena; names op and what otherwise. */
int hr_cu_span(const hr_cuda *c, uint64_t off, uint64_t bytes, const char *op, const char *what, hr_err *e);
/* Reports a failed kernel launch (bad configuration, missing kernel image) after it. */
int hr_cu_launched(const char *op, hr_err *e);

template <typename T> static inline T *hr_cu_at(const hr_cuda *c, uint64_t off) { return (T *)(c->arena + off); }

/* Checks W (type, shape, row bytes) and its bytes in the arena. */
int hr_cu_check_mat(const hr_cuda *c, const hr_dmat *W, const char *op, hr_err *e);

/* A matrix product as the kernels see it: Y[t][r] = W row (idx ? idx[r] : r) . X[t]. */
typedef struct hr_cu_mm {
    const char *W;
    size_t row_bytes;
    int64_t n_in, n_out; /* n_out bounds idx entries (bad ones give NaN, not a fault) */
    int64_t n_rows;      /* outputs per token: n_out, or n_idx when gathering */
    const int32_t *idx;
    const float *X;      /* F32 [n_tok][n_in] */
    const char *Xq;      /* quantized weights: X prepared as Q8_0 blocks [n_tok][n_in/32] */
    int64_t n_tok;
    float *Y;            /* [n_tok][n_rows] */
    bool vec;            /* rows and X 16-byte aligned, n_in a multiple of 8: vector loads */
    const uint8_t *need; /* gather_matmul_masked: U8 [n_tok][n_rows]; Y is 0 where unset, and the
                          * matrix-vector kernel skips a row no token sets (NULL: every row) */
} hr_cu_mm;

/* Tokens the matrix-vector kernel handles in one pass; larger batches use tiles. */
#define HR_CU_MMV_TOK 8

/* Quantizes n_blocks consecutive 32-element blocks of x to Q8_0 in dst, as the CPU's
 * hr_prep_q8_0 does (id = 127/amax, ties to even). */
int hr_cu_prep_q8(const hr_cuda *c, const float *x, int64_t n_blocks, char *dst, hr_err *e);
/* Launchers for the kernel families (type from `type`, shape from m). */
int hr_cu_launch_mmv(const hr_cuda *c, uint32_t type, const hr_cu_mm *m, hr_err *e);
int hr_cu_launch_mmtile(const hr_cuda *c, uint32_t type, const hr_cu_mm *m, hr_err *e);
/* Fails with a message when this build has no kernel image for the current device. */
int hr_cu_probe(int index, hr_err *e);

/* Kernel code is loaded at open, before free memory is read for the budget: under CUDA's
 * lazy loading (the default since 12.2) a kernel's first launch would otherwise take
 * device memory after the arena was sized to what was free. cudaFuncGetAttributes loads
 * a kernel; each kernel file loads its own and returns the first error. */
#define HR_CU_LOAD(st, kernel)                                                                                         \
    do {                                                                                                               \
        cudaFuncAttributes fa_;                                                                                        \
        if ((st) == cudaSuccess) (st) = cudaFuncGetAttributes(&fa_, kernel);                                           \
    } while (0)
cudaError_t hr_cu_load_attention(void);
cudaError_t hr_cu_load_elementwise(void);
cudaError_t hr_cu_load_matvec(void);
cudaError_t hr_cu_load_mmtile(void);
cudaError_t hr_cu_load_norm(void);
cudaError_t hr_cu_load_quantize(void);
cudaError_t hr_cu_load_rope(void);
cudaError_t hr_cu_load_sparse(void);

/* ---- operations (same contracts as hr_dev_ops) ---- */
int hr_cu_matmul(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t Y, hr_err *e);
int hr_cu_gather_matmul(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                        uint64_t Y, hr_err *e);
int hr_cu_sparse_axpy(hr_dev *d, const hr_dmat *Wt, uint64_t A, int64_t n_tok, uint64_t idx, int64_t n_idx,
                      uint64_t Y, hr_err *e);
int hr_cu_rmsnorm(hr_dev *d, uint64_t X, uint64_t w, int64_t n, int64_t n_tok, float eps, uint64_t Y, hr_err *e);
int hr_cu_rope(hr_dev *d, uint64_t X, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
               const int32_t *pos, float base, float freq_scale, bool neox, const hr_dev_rope *ext, hr_err *e);
int hr_cu_attention(hr_dev *d, const hr_dev_attn *a, uint64_t Q, uint64_t K, uint64_t V, uint64_t OUT, hr_err *e);
int hr_cu_ffn_act(hr_dev *d, uint64_t G, uint64_t U, int64_t n, int act, uint64_t H, hr_err *e);
int hr_cu_swiglu_oai(hr_dev *d, uint64_t G, uint64_t U, int64_t n, float alpha, float limit, uint64_t H, hr_err *e);
int hr_cu_apply_mask(hr_dev *d, uint64_t A, uint64_t mask, int64_t n_tok, int64_t n, hr_err *e);
int hr_cu_add(hr_dev *d, uint64_t X, int64_t n, uint64_t Y, hr_err *e);
int hr_cu_add_bias(hr_dev *d, uint64_t b, int64_t n, int64_t n_tok, uint64_t Y, hr_err *e);
/* FFN mode threshold's split (cuda_elementwise.cu, cuda_matmul.cu) */
int hr_cu_thr_mask(hr_dev *d, uint64_t G, int64_t n, float thr, int act, uint64_t MASK, hr_err *e);
int hr_cu_gather_matmul_masked(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                               uint64_t MASK, uint64_t Y, hr_err *e);

/* Grid size for a grid-stride loop over n items with `threads` per block. */
static inline unsigned hr_cu_blocks(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}
#endif
