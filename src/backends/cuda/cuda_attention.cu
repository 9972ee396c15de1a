/* Causal grouped-query attention over the F16 KV cache [n_seq][n_layer][n_ctx][kvd].
 * The batch's K and V rows are stored first (all of them, so tokens of one batch see
 * each other), then one block per (head, token) attends over cells 0..pos of its
 * sequence. Numerics follow the CPU with an F16 cache: q rounded to F16 for K.q, a
 * softmax with the maximum subtracted and the sum in double, probabilities rounded to
 * F16 for V.p. Three passes (maximum, sum, output): the scores are kept in shared
 * memory when they fit (ATT_SHM_MAX bytes in all), else recomputed from the keys, so any
 * context length runs, and the same values come out either way. */
#include "cuda_internal.h"
#include "cuda_numerics.cuh"

#define ATT_WARPS 8
/* Dynamic shared memory allowed without opting in: the 48 KiB default limit of every
 * architecture less k_attend's static arrays (wmax, wsum), which count against it too. */
#define ATT_SHM_STATIC (ATT_WARPS * (sizeof(float) + sizeof(double)))
#define ATT_SHM_MAX ((48 << 10) - ATT_SHM_STATIC)

typedef struct att_args {
    const float *Q, *K, *V;
    float *O;
    uint16_t *kc, *vc;
    int n_head, n_head_kv, hd, n_ctx, n_layer, layer;
    int cache_n; /* score cells kept in shared memory (0: recompute) */
    float scale;
} att_args;

__global__ void k_kv_store(const att_args a, const hr_cu_tokpos tp) {
    const int t = blockIdx.x;
    const int64_t kvd = (int64_t)a.n_head_kv * a.hd;
    const int64_t cell = (((int64_t)tp.seq[t] * a.n_layer + a.layer) * a.n_ctx + tp.pos[t]) * kvd;
    for (int64_t j = threadIdx.x; j < kvd; j += blockDim.x) {
        a.kc[cell + j] = hr_cu_f2h(a.K[t * kvd + j]);
        a.vc[cell + j] = hr_cu_f2h(a.V[t * kvd + j]);
    }
}

/* Scaled K.q of one cell; every lane returns the full sum. */
__device__ __forceinline__ float score(const uint16_t *k, const float *q, int hd, int lane, float scale) {
    float s = 0.0f;
    for (int d = lane; d < hd; d += 32) s += hr_cu_h2f(k[d]) * q[d];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    /* Rounded on its own, as the CPU's x *= s: a plain product could be fused with the
     * caller's "- mx" when scores are recomputed, and differ from the stored ones. */
    return __fmul_rn(s, scale);
}

__global__ void __launch_bounds__(ATT_WARPS * 32) k_attend(const att_args a, const hr_cu_tokpos tp) {
    HR_CU_DYN_SHARED(float, sm); /* q [hd], one accumulator row [hd] per warp, scores */
    __shared__ float wmax[ATT_WARPS];
    __shared__ double wsum[ATT_WARPS];
    const int h = blockIdx.x, t = blockIdx.y, hd = a.hd;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t kvd = (int64_t)a.n_head_kv * hd;
    const int kvh = h / (a.n_head / a.n_head_kv);
    const int n_kv = tp.pos[t] + 1;
    const int64_t base = ((int64_t)tp.seq[t] * a.n_layer + a.layer) * a.n_ctx * kvd + (int64_t)kvh * hd;
    const uint16_t *K = a.kc + base, *V = a.vc + base;
    float *q = sm, *acc = sm + hd + warp * hd, *sc = sm + (1 + ATT_WARPS) * hd;
    const bool cached = a.cache_n > 0;
    const float *qin = a.Q + ((int64_t)t * a.n_head + h) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) q[d] = hr_cu_round_h(qin[d]);
    for (int d = lane; d < hd; d += 32) acc[d] = 0.0f;
    __syncthreads();

    float mx = -INFINITY;
    for (int p = warp; p < n_kv; p += ATT_WARPS) {
        const float s = score(K + p * kvd, q, hd, lane, a.scale);
        if (cached && lane == 0) sc[p] = s;
        mx = fmaxf(mx, s);
    }
    if (lane == 0) wmax[warp] = mx;
    __syncthreads();
    mx = wmax[0];
    for (int w = 1; w < ATT_WARPS; w++) mx = fmaxf(mx, wmax[w]);

    double sum = 0;
    for (int p = warp; p < n_kv; p += ATT_WARPS)
        sum += (double)expf((cached ? sc[p] : score(K + p * kvd, q, hd, lane, a.scale)) - mx);
    if (lane == 0) wsum[warp] = sum;
    __syncthreads();
    sum = wsum[0];
    for (int w = 1; w < ATT_WARPS; w++) sum += wsum[w];
    const float inv = (float)(1.0 / sum);

    for (int p = warp; p < n_kv; p += ATT_WARPS) {
        const float s = cached ? sc[p] : score(K + p * kvd, q, hd, lane, a.scale);
        const float pr = hr_cu_round_h(expf(s - mx) * inv);
        const uint16_t *v = V + p * kvd;
        for (int d = lane; d < hd; d += 32) acc[d] += pr * hr_cu_h2f(v[d]);
    }
    __syncthreads();
    float *out = a.O + ((int64_t)t * a.n_head + h) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float o = sm[hd + d];
        for (int w = 1; w < ATT_WARPS; w++) o += sm[hd + w * hd + d];
        out[d] = o;
    }
}

/* Shape, positions and every byte the kernels touch, before anything is enqueued. */
static int att_check(const hr_cuda *c, const hr_dev_attn *a, uint64_t Q, uint64_t K, uint64_t V, uint64_t OUT,
                     hr_err *e) {
    const char *op = "attention";
    if (a->n_tok < 0 || a->n_head <= 0 || a->n_head_kv <= 0 || a->n_head % a->n_head_kv || a->head_dim <= 0 ||
        a->head_dim > 1024 || a->n_ctx <= 0 || a->n_layer <= 0 || a->layer < 0 || a->layer >= a->n_layer)
        return hr_errf(e, "cuda attention: bad shape (n_tok %d, heads %d/%d, head_dim %d, n_ctx %d, layer %d of %d)",
                       a->n_tok, a->n_head, a->n_head_kv, a->head_dim, a->n_ctx, a->layer, a->n_layer);
    if (!a->pos) return hr_errf(e, "cuda attention: no positions");
    int32_t max_seq = 0;
    for (int32_t t = 0; t < a->n_tok; t++) {
        const int32_t s = a->seq ? a->seq[t] : 0;
        if (a->pos[t] < 0 || a->pos[t] >= a->n_ctx)
            return hr_errf(e, "cuda attention: token %d has position %d outside the %d-cell context", t, a->pos[t], a->n_ctx);
        if (s < 0) return hr_errf(e, "cuda attention: token %d has sequence %d", t, s);
        max_seq = s > max_seq ? s : max_seq;
    }
    if (Q % 4 || K % 4 || V % 4 || OUT % 4 || a->k_cache % 2 || a->v_cache % 2)
        return hr_errf(e, "cuda attention: misaligned buffer");
    const uint64_t kvd = (uint64_t)a->n_head_kv * (uint64_t)a->head_dim, qd = (uint64_t)a->n_head * (uint64_t)a->head_dim;
    const uint64_t cache = ((uint64_t)max_seq + 1) * (uint64_t)a->n_layer * (uint64_t)a->n_ctx * kvd * 2;
    const uint64_t nt = (uint64_t)a->n_tok;
    return hr_cu_span(c, Q, nt * qd * 4, op, "Q", e) || hr_cu_span(c, OUT, nt * qd * 4, op, "OUT", e) ||
                   hr_cu_span(c, K, nt * kvd * 4, op, "K", e) || hr_cu_span(c, V, nt * kvd * 4, op, "V", e) ||
                   hr_cu_span(c, a->k_cache, cache, op, "k_cache", e) ||
                   hr_cu_span(c, a->v_cache, cache, op, "v_cache", e)
               ? -1
               : 0;
}

static hr_cu_tokpos tok_chunk(const hr_dev_attn *a, int64_t t0, int nt) {
    hr_cu_tokpos tp = {};
    for (int t = 0; t < nt; t++) {
        tp.pos[t] = a->pos[t0 + t];
        tp.seq[t] = a->seq ? a->seq[t0 + t] : 0;
    }
    return tp;
}

int hr_cu_attention(hr_dev *d, const hr_dev_attn *a, uint64_t Q, uint64_t K, uint64_t V, uint64_t OUT, hr_err *e) {
    hr_cuda *c = hr_cu(d);
    if (att_check(c, a, Q, K, V, OUT, e)) return -1;
    if (a->n_tok == 0) return 0;
    if (hr_cu_enter(c, "attention", e)) return -1;
    att_args g = {};
    g.kc = hr_cu_at<uint16_t>(c, a->k_cache);
    g.vc = hr_cu_at<uint16_t>(c, a->v_cache);
    g.n_head = a->n_head, g.n_head_kv = a->n_head_kv, g.hd = a->head_dim;
    g.n_ctx = a->n_ctx, g.n_layer = a->n_layer, g.layer = a->layer, g.scale = a->scale;
    const int64_t kvd = (int64_t)a->n_head_kv * a->head_dim, qd = (int64_t)a->n_head * a->head_dim;
    for (int64_t t0 = 0; t0 < a->n_tok; t0 += HR_CU_TOK_CHUNK) {
        const int nt = (int)(a->n_tok - t0 < HR_CU_TOK_CHUNK ? a->n_tok - t0 : HR_CU_TOK_CHUNK);
        g.K = hr_cu_at<const float>(c, K) + t0 * kvd;
        g.V = hr_cu_at<const float>(c, V) + t0 * kvd;
        HR_CU_LAUNCH(k_kv_store, (unsigned)nt, 128, 0, c->stream)(g, tok_chunk(a, t0, nt));
        if (hr_cu_launched("attention (KV store)", e)) return -1;
    }
    const size_t base_shm = (size_t)(1 + ATT_WARPS) * (size_t)a->head_dim * sizeof(float);
    for (int64_t t0 = 0; t0 < a->n_tok; t0 += HR_CU_TOK_CHUNK) {
        const int nt = (int)(a->n_tok - t0 < HR_CU_TOK_CHUNK ? a->n_tok - t0 : HR_CU_TOK_CHUNK);
        int n_kv = 0;
        for (int t = 0; t < nt; t++) n_kv = a->pos[t0 + t] + 1 > n_kv ? a->pos[t0 + t] + 1 : n_kv;
        g.cache_n = base_shm + (size_t)n_kv * sizeof(float) <= ATT_SHM_MAX ? n_kv : 0;
        const size_t shm = base_shm + (size_t)g.cache_n * sizeof(float);
        g.Q = hr_cu_at<const float>(c, Q) + t0 * qd;
        g.O = hr_cu_at<float>(c, OUT) + t0 * qd;
        HR_CU_LAUNCH(k_attend, dim3((unsigned)a->n_head, (unsigned)nt), ATT_WARPS * 32, shm, c->stream)(g, tok_chunk(a, t0, nt));
        if (hr_cu_launched("attention", e)) return -1;
    }
    return 0;
}

cudaError_t hr_cu_load_attention(void) {
    cudaError_t st = cudaSuccess;
    HR_CU_LOAD(st, k_kv_store);
    HR_CU_LOAD(st, k_attend);
    return st;
}
