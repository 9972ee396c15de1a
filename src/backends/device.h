/* A compute device that holds resident weights: the CUDA backend (backends/cuda), or the
 * CPU standing in for it (backends/standin, used by tests on machines without a GPU).
 *
 * The engine decides what lives where (placement is data, DESIGN.md); a device only
 * stores bytes it is given and runs operations on them. All device memory is one arena
 * reserved once, at exactly the size the engine accounted before the first allocation,
 * so nothing can run out of memory later. Every tensor, activation and scratch buffer is
 * an offset into that arena.
 *
 * Operations are enqueued in order on the device's single stream and may run
 * asynchronously; hr_dev_ops.sync waits for all of them. Host pointers passed to
 * to_dev/to_host must stay valid until the next sync and should come from host_alloc
 * (pinned, so copies overlap CPU work). */
#ifndef HR_DEVICE_H
#define HR_DEVICE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef struct hr_dev hr_dev;

/* A weight matrix resident in the arena: n_out rows of n_in elements of a ggml type
 * (F32, F16, BF16, Q8_0, Q4_0), rows row_bytes apart, as on the host. */
typedef struct hr_dmat {
    uint32_t type;
    int64_t n_in, n_out;
    size_t row_bytes;
    uint64_t off;
} hr_dmat;

/* Per-token placement of a batch in the KV cache. */
typedef struct hr_dev_attn {
    int32_t layer;
    int32_t n_tok;
    int32_t n_head, n_head_kv, head_dim;
    int32_t n_ctx;          /* cells per sequence and layer */
    int32_t n_layer;
    uint64_t k_cache, v_cache; /* F16 caches [n_seq][n_layer][n_ctx][n_head_kv*head_dim] */
    const int32_t *pos;     /* host [n_tok]: position of each token */
    const int32_t *seq;     /* host [n_tok]: sequence of each token (NULL: all 0) */
    float scale;            /* 1/sqrt(head_dim) */
} hr_dev_attn;

/* RoPE's extensions, as the host's hr_rope_ext computes them: per-pair frequency divisors
 * (Llama-3.1 rope_freqs, LongRoPE factors) resident in the arena, YaRN's ramp mix between
 * interpolated and extrapolated angles, and the magnitude scale of every rotation. */
typedef struct hr_dev_rope {
    uint64_t freq_factors; /* F32 [n_rot/2] in the arena; UINT64_MAX: none */
    float ext_factor;      /* 0: no YaRN mix */
    float attn_factor;     /* 1: none */
    float corr_dims[2];
} hr_dev_rope;

typedef struct hr_dev_ops {
    const char *name; /* "cuda", "standin" */
    /* Free and total device memory now. */
    int (*mem_info)(hr_dev *d, uint64_t *free_b, uint64_t *total_b, hr_err *e);
    /* Bytes the device itself needs beyond the arena (library workspaces, context):
     * counted by the engine's accounting. */
    uint64_t (*overhead)(const hr_dev *d);
    /* Reserves the arena (once). Offsets handed to the ops below are < bytes. */
    int (*reserve)(hr_dev *d, uint64_t bytes, hr_err *e);
    /* Pinned host memory for per-token transfers; host_free(NULL) is a no-op. */
    void *(*host_alloc)(hr_dev *d, size_t bytes);
    void (*host_free)(hr_dev *d, void *p);

    /* ---- enqueued on the stream, in order ---- */
    int (*to_dev)(hr_dev *d, uint64_t dst, const void *src, uint64_t bytes, hr_err *e);
    int (*to_host)(hr_dev *d, void *dst, uint64_t src, uint64_t bytes, hr_err *e);
    /* Y[t][r] = W row r . X[t] for t < n_tok, r < W.n_out (X F32 [n_tok][n_in], Y F32). */
    int (*matmul)(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t Y, hr_err *e);
    /* Y[t][i] = W row idx[i] . X[t], i < n_idx (idx: I32 offset in the arena). */
    int (*gather_matmul)(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                         uint64_t Y, hr_err *e);
    /* Y[t][k] = sum over i < n_idx of A[t][i] * Wt row idx[i] [k]; Y overwritten. */
    int (*sparse_axpy)(hr_dev *d, const hr_dmat *Wt, uint64_t A, int64_t n_tok, uint64_t idx, int64_t n_idx,
                       uint64_t Y, hr_err *e);
    /* Y[t] = X[t] / rms(X[t]) * w (w F32 [n]); Y may equal X. */
    int (*rmsnorm)(hr_dev *d, uint64_t X, uint64_t w, int64_t n, int64_t n_tok, float eps, uint64_t Y, hr_err *e);
    /* Rotates n_rot dims of each head of X [n_tok][n_head*head_dim] at pos[t] (host array);
     * ext NULL: plain RoPE (hr_rope_ext without factors or YaRN), else with them. */
    int (*rope)(hr_dev *d, uint64_t X, int64_t n_tok, int32_t n_head, int32_t head_dim, int32_t n_rot,
                const int32_t *pos, float base, float freq_scale, bool neox, const hr_dev_rope *ext, hr_err *e);
    /* Stores K, V [n_tok][n_head_kv*head_dim] in the caches at (seq, layer, pos), then
     * causal attention of Q [n_tok][n_head*head_dim] into OUT (same shape as Q). */
    int (*attention)(hr_dev *d, const hr_dev_attn *a, uint64_t Q, uint64_t K, uint64_t V, uint64_t OUT, hr_err *e);
    /* H[i] = act(G[i]) * U[i] (G == UINT64_MAX: act(U[i])), n elements; act is hr_act. */
    int (*ffn_act)(hr_dev *d, uint64_t G, uint64_t U, int64_t n, int act, uint64_t H, hr_err *e);
    /* Zeroes A[t][i] where mask[t][i] == 0 (mask: U8 [n_tok][n] in the arena). */
    int (*apply_mask)(hr_dev *d, uint64_t A, uint64_t mask, int64_t n_tok, int64_t n, hr_err *e);
    /* Y[i] += X[i] for i < n (F32; X and Y in the arena, X may not overlap Y unless equal). */
    int (*add)(hr_dev *d, uint64_t X, int64_t n, uint64_t Y, hr_err *e);
    /* Y[t][i] += b[i] for t < n_tok, i < n (biases; b F32 [n], both in the arena). */
    int (*add_bias)(hr_dev *d, uint64_t b, int64_t n, int64_t n_tok, uint64_t Y, hr_err *e);
    /* Waits until every enqueued operation has finished (the copy stream below aside). */
    int (*sync)(hr_dev *d, hr_err *e);

    /* ---- the copy stream: uploads that run beside the operations above ----
     * copy_async enqueues a host-to-device copy of pinned host memory (host_alloc) on a second
     * stream and returns its ticket (1, 2, ...: copies complete in ticket order); src must
     * stay unchanged, and the destination unused by any operation, until copy_done reports
     * the ticket complete. copy_done never waits. The engine refills expert slots this way
     * (docs/hybrid.md), so the copy is not on the decode path. */
    int (*copy_async)(hr_dev *d, uint64_t dst, const void *src, uint64_t bytes, uint64_t *ticket, hr_err *e);
    int (*copy_done)(hr_dev *d, uint64_t ticket, bool *done, hr_err *e);
    /* Waits for every copy of the copy stream (before its host buffers are freed). */
    int (*copy_sync)(hr_dev *d, hr_err *e);
    void (*free)(hr_dev *d);
    /* ---- enqueued on the stream, for FFN mode threshold's split (engine/hybrid_ffn_thr.c) ----
     * MASK[i] = |act(G[i])| > thr for i < n (U8), act an hr_act applied to the gate alone
     * (SiLU for SwiGLU, ggml's GELU, ReLU for the ReLU family; dReLU: relu(g)), computed as
     * ffn_act computes act(g), so the test is the host's on the same gate values. */
    int (*thr_mask)(hr_dev *d, uint64_t G, int64_t n, float thr, int act, uint64_t MASK, hr_err *e);
    /* gather_matmul that reads only the rows some token needs: Y[t][i] = MASK[t][i] ?
     * W row idx[i] . X[t] : 0 (MASK U8 [n_tok][n_idx]); a row no token's MASK sets is not
     * read where the kernel can skip it (the matrix-vector path). */
    int (*gather_matmul_masked)(hr_dev *d, const hr_dmat *W, uint64_t X, int64_t n_tok, uint64_t idx, int64_t n_idx,
                                uint64_t MASK, uint64_t Y, hr_err *e);
    /* ---- enqueued on the stream, for gpt-oss experts (engine/hybrid_moe.c) ----
     * OpenAI's clamped SwiGLU, as the CPU's hr_swiglu_oai: x = min(G[i], limit), y = U[i]
     * clamped to [-limit, limit], H[i] = x / (1 + exp(alpha * -x)) * (y + 1), n elements. */
    int (*swiglu_oai)(hr_dev *d, uint64_t G, uint64_t U, int64_t n, float alpha, float limit, uint64_t H, hr_err *e);
    /* to_dev has copied its source when it returns (no copy engine, the stand-in): a caller
     * gains nothing by staging copies on another thread, and staging on its own keeps the
     * order of its copies exact (the expert cache, engine/expert_cache.c). */
    bool copies_inline;
} hr_dev_ops;

struct hr_dev {
    const hr_dev_ops *ops;
    void *impl;
};

/* Bytes one arena allocation of n bytes occupies (aligned to HR_DEV_ALIGN). */
#define HR_DEV_ALIGN 256
static inline uint64_t hr_dev_round(uint64_t n) { return (n + HR_DEV_ALIGN - 1) / HR_DEV_ALIGN * HR_DEV_ALIGN; }

/* The CUDA device `index`, or NULL with a message in e when CUDA is not compiled in,
 * no driver or GPU is present, or the index is out of range. */
hr_dev *hr_dev_cuda_open(int index, hr_err *e);
/* CUDA devices present, without opening one; 0 with the reason in e when there are none
 * (no CUDA backend in this build, no driver, no GPU). */
int hr_dev_cuda_count(hr_err *e);
/* What `hearth --list-devices` prints of CUDA device `index` (< hr_dev_cuda_count). Free
 * memory is read through the device's primary context, which this creates. */
typedef struct hr_dev_desc {
    char name[128];
    uint64_t total, free_b;
    int cc_major, cc_minor;
} hr_dev_desc;
int hr_dev_cuda_describe(int index, hr_dev_desc *out, hr_err *e);
/* The CPU standing in for a device: same operations, synchronous, host memory; its
 * mem_info reports `capacity` bytes (tests set small budgets). */
hr_dev *hr_dev_standin_open(uint64_t capacity, int n_threads, hr_err *e);
/* Tests: the stand-in's async copies land only after copy_done was asked about them `lag`
 * times without success (0, the default: at once), as a slow copy engine would. */
void hr_dev_standin_set_copy_lag(hr_dev *d, int32_t lag);
void hr_dev_close(hr_dev *d);
#endif
