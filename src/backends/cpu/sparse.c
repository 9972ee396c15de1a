/* Neuron-aware operators: hr_gather_matmul (the rows of active neurons, with the
 * dense kernels, so each result equals hr_matmul's for that row bit for bit) and
 * hr_sparse_axpy (sum of active rows scaled by their activations). The gathers run idx
 * as a range run (pool.h); the axpy splits it into contiguous chunks claimed by the pool,
 * which sum into their own
 * partial outputs (chunk 0 into Y) which are then added in chunk order; the chunk
 * count depends only on the thread count and the shape, so results repeat exactly. */
#include "sparse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"
#include "sparse_axpy_impl.h"
#include "prof.h"

#define TOK_BLOCK 64          /* gather: tokens whose prepared rows are reused from L2 */
#define AX_TOK_BLOCK 16       /* axpy: tokens sharing one visit of a row */
#define PAR_PREP_ELEMS 16384  /* below this, preparing on the caller beats a pool run */
#define CHUNKS_PER_THREAD 4   /* pieces per thread, so a thread slowed by another process sheds work */
#define MIN_CHUNK_ROWS 16
#define PAR_SUM_FLOATS 16384  /* below this, the caller adds the partials alone */
#define STEP_BYTES 32768      /* gather: weights x tokens per range step (pool.h) */

/* ---------------------------------------------------------------- validation */

static int check_mat(const char *op, const hr_mat *W, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                     hr_err *e) {
    if (!W || !W->data) return hr_errf(e, "%s: missing matrix", op);
    if (n_tok < 1 || W->n_in < 1 || W->n_out < 1 || n_idx < 0) return hr_errf(e, "%s: empty shape", op);
    if (n_idx > 0 && !idx) return hr_errf(e, "%s: missing index list", op);
    if (hr_row_bytes(W->type, (uint64_t)W->n_in) != W->row_bytes || W->row_bytes == 0)
        return hr_errf(e, "%s: row size %zu does not fit %lld %s elements", op, W->row_bytes,
                       (long long)W->n_in, hr_type_name(W->type) ? hr_type_name(W->type) : "?");
    if (W->stride && W->stride < W->row_bytes)
        return hr_errf(e, "%s: row stride %zu is under the row size %zu", op, W->stride, W->row_bytes);
    for (int64_t i = 0; i < n_idx; i++)
        if (idx[i] < 0 || idx[i] >= W->n_out)
            return hr_errf(e, "%s: index %lld is %d, outside %lld rows", op, (long long)i, (int)idx[i],
                           (long long)W->n_out);
    return 0;
}

/* Contiguous chunk ith of n items split nth ways, each a multiple of `mult` long. */
static void chunk_range(int64_t n, int ith, int nth, int64_t mult, int64_t *i0, int64_t *i1) {
    int64_t per = (n + nth - 1) / nth;
    per = (per + mult - 1) / mult * mult;
    *i0 = per * ith;
    *i1 = *i0 + per;
    if (*i0 > n) *i0 = n;
    if (*i1 > n) *i1 = n;
}

static int n_chunks(int nth, int64_t n_idx, int per_thread) {
    int64_t chunks = nth == 1 ? 1 : (int64_t)nth * per_thread;
    int64_t max_chunks = (n_idx + MIN_CHUNK_ROWS - 1) / MIN_CHUNK_ROWS;
    if (chunks > max_chunks) chunks = max_chunks;
    if (chunks > 65535) chunks = 65535;
    return chunks < 1 ? 1 : (int)chunks;
}

/* ---------------------------------------------------------------- gathered product */

typedef struct {
    const hr_kernels *k;
    hr_tile_fn tile, rows2, rows4;
    hr_gather4_fn gather4;
    const hr_mat *W;
    const float *X;
    const char *xq;
    size_t xs;  /* bytes between prepared token rows */
    char *xt;   /* batches, where the table has tile_x: the rows re-laid for it (xts bytes apart), or NULL */
    size_t xts;
    int64_t n_tok;
    const int32_t *idx;
    int64_t n_idx;
    float *Y;
    int64_t step; /* indices per step of the group's range run */
} gm_job;

static void gm_prep_task(void *arg, int ith, int nth) {
    const gm_job *j = arg;
    int64_t t0, t1;
    chunk_range(j->n_tok, ith, nth, 1, &t0, &t1);
    hr_act_prep_fn prep = j->k->act_prep[j->W->type];
    for (int64_t t = t0; t < t1; t++) prep(j->X + t * j->W->n_in, (char *)j->xq + t * j->xs, j->W->n_in);
    for (int64_t t = t0; j->xt && t < t1; t++)
        hr_kernels_ext_of(j->k)->tile_xprep[j->W->type](j->xq + t * j->xs, j->xt + t * j->xts, j->W->n_in);
}

/* The R rows ix[0..R) as a tile: evenly spaced (a tile steps by one stride), from
 * the lowest. *rev says the rows run backwards, so output r belongs to ix[R-1-r]. */
static int tile_rows(const int32_t *ix, int R, int64_t *base, int64_t *step, int *rev) {
    int64_t d = (int64_t)ix[1] - ix[0];
    for (int r = 2; r < R; r++)
        if ((int64_t)ix[r] - ix[0] != d * r) return 0;
    *rev = d < 0;
    *base = *rev ? ix[R - 1] : ix[0];
    *step = *rev ? -d : d;
    return 1;
}

/* Decode (one token) over gathered rows. Each active row starts a new page where no
 * hardware stream runs yet, and a burst of prefetches at a row's start (or a kernel's own
 * prefetch PF_AHEAD bytes on, past the row's end into an inactive neighbour) keeps only a
 * few lines in flight. What streams scattered rows at the dense kernel's rate (bench/sparse.c,
 * docs/performance.md) is what the dense rows4 does for contiguous ones: 4 rows per call,
 * and while it reads offset o of its rows, prefetches into L2 offset o of rows GM_LEAD
 * calls on, so about 4 x GM_LEAD rows' lines are in flight, spread over the call.
 * A loop of nothing but __builtin_prefetch is deleted by GCC as side-effect free, hence
 * the asm. */
#define GM_LEAD 4             /* gather4 calls between a row's prefetch and its use */
#define GM_BUF_BYTES 81920    /* copy path: 8 row slots (rows4 prefetches 4 rows past its own) */
#if defined(__x86_64__) && defined(__GNUC__)
#define PREFETCH(p) __asm__ volatile("prefetcht1 %0" : : "m"(*(const char *)(p)))
#elif defined(__aarch64__) && defined(__GNUC__)
#define PREFETCH(p) __asm__ volatile("prfm pldl2strm, %0" : : "Q"(*(const char *)(p)))
#else
#define PREFETCH(p) __builtin_prefetch((p), 0, 2)
#endif
static void prefetch_row(const char *p, size_t rb) {
    for (size_t o = 0; o < rb; o += 64) PREFETCH(p + o);
}

/* The 4 rows at idx positions p.. (clamped to the chunk), or `cur` past its end. */
static void gm_rows(const gm_job *j, int64_t p, int64_t i1, const void **out, const void *const *cur) {
    const char *w = j->W->data;
    for (int r = 0; r < 4; r++) out[r] = p + r < i1 ? w + j->idx[p + r] * hr_mat_stride(j->W) : cur[r];
}

/* The first rows of a chunk have had no earlier call to fetch them: fetch them at once. */
static void gm_prologue(const gm_job *j, int64_t i0, int64_t i1) {
    for (int64_t i = i0 + 4; i < i1 && i < i0 + 4 * GM_LEAD; i++)
        prefetch_row((const char *)j->W->data + j->idx[i] * hr_mat_stride(j->W), j->W->row_bytes);
}

/* Types with a gather4 kernel: it prefetches the rows 4 x GM_LEAD positions on. */
static int64_t gm_decode_g4(const gm_job *j, int64_t i0, int64_t i1) {
    const void *rows[4], *nx[4];
    int64_t i = i0;
    if (i1 - i0 >= 4) gm_prologue(j, i0, i1);
    for (; i + 4 <= i1; i += 4) {
        gm_rows(j, i, i1, rows, NULL);
        gm_rows(j, i + 4 * GM_LEAD, i1, nx, rows);
        j->gather4(j->W->n_in, rows, nx, j->xq, &j->Y[i]);
    }
    return i;
}

/* Types with only the strided rows4 (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4; F32/F16/BF16, Q4_0,
 * Q8_0 and the K-quants have gather4): each group of 4 rows is copied into a small buffer
 * (from L2, where the copy of GM_LEAD groups earlier prefetched it, at the same offsets)
 * and rows4 runs there. Its results are the same as on the mapping; the copy costs less
 * than the misses it removes (bench/sparse.c). */
static int64_t gm_decode_copy(const gm_job *j, int64_t i0, int64_t i1) {
    const size_t rb = j->W->row_bytes;
    _Alignas(64) char buf[GM_BUF_BYTES];
    const void *rows[4], *nx[4];
    int64_t i = i0;
    if (i1 - i0 >= 4) gm_prologue(j, i0, i1);
    for (; i + 4 <= i1; i += 4) {
        gm_rows(j, i, i1, rows, NULL);
        gm_rows(j, i + 4 * GM_LEAD, i1, nx, rows);
        size_t o = 0;
        for (; o + 64 <= rb; o += 64)
            for (int r = 0; r < 4; r++) {
                memcpy(buf + r * rb + o, (const char *)rows[r] + o, 64);
                PREFETCH((const char *)nx[r] + o);
            }
        for (int r = 0; o < rb && r < 4; r++) memcpy(buf + r * rb + o, (const char *)rows[r] + o, rb - o);
        j->rows4(j->W->n_in, buf, rb, j->xq, 0, &j->Y[i], 0);
    }
    return i;
}

static void gm_decode(const gm_job *j, int64_t i0, int64_t i1) {
    const hr_mat *W = j->W;
    const size_t rb = W->row_bytes, st = hr_mat_stride(W);
    const char *w = W->data;
    const int32_t *ix = j->idx;
    hr_vec_dot_fn dot = j->k->vec_dot[W->type];
    int64_t i = i0, base, step;
    int rev;
    if (j->gather4) i = gm_decode_g4(j, i0, i1);
    else if (j->rows4 && 8 * rb <= GM_BUF_BYTES) i = gm_decode_copy(j, i0, i1);
    for (; j->rows2 && i + 2 <= i1; i += 2) {
        tile_rows(ix + i, 2, &base, &step, &rev);
        float tmp[2];
        j->rows2(W->n_in, w + base * st, (size_t)step * st, j->xq, 0, rev ? tmp : &j->Y[i], 0);
        if (rev) j->Y[i] = tmp[1], j->Y[i + 1] = tmp[0];
    }
    for (; i < i1; i++) dot(W->n_in, &j->Y[i], w + ix[i] * st, j->xq);
}

/* Rows ix[i..i+HR_TILE_R) against tokens [t, t+HR_TILE_C) with one tile, if they are
 * evenly spaced; returns 0 (nothing done) otherwise. */
static int gm_tile(const gm_job *j, int64_t i, int64_t t) {
    const size_t rb = hr_mat_stride(j->W); /* from a row to the next */
    int64_t base, step;
    int rev;
    if (!tile_rows(j->idx + i, HR_TILE_R, &base, &step, &rev)) return 0;
    const char *wp = (const char *)j->W->data + base * rb;
    const char *xp = j->xt ? j->xt + t * j->xts : j->xq + t * j->xs;
    const size_t xs = j->xt ? j->xts : j->xs;
    float *y = j->Y + t * j->n_idx + i;
    if (!rev) {
        j->tile(j->W->n_in, wp, (size_t)step * rb, xp, xs, y, (size_t)j->n_idx);
        return 1;
    }
    float tmp[HR_TILE_C * HR_TILE_R];
    j->tile(j->W->n_in, wp, (size_t)step * rb, xp, xs, tmp, HR_TILE_R);
    for (int c = 0; c < HR_TILE_C; c++)
        for (int r = 0; r < HR_TILE_R; r++) y[c * j->n_idx + r] = tmp[c * HR_TILE_R + HR_TILE_R - 1 - r];
    return 1;
}

/* Outputs [i0, i1) of the job. */
static void gm_span(const gm_job *j, int64_t i0, int64_t i1) {
    if (j->n_tok == 1) {
        gm_decode(j, i0, i1);
        return;
    }
    const int64_t n = j->W->n_in, ni = j->n_idx;
    const size_t rb = hr_mat_stride(j->W); /* from a row to the next */
    const char *w = j->W->data;
    hr_vec_dot_fn dot = j->k->vec_dot[j->W->type];
    for (int64_t tb = 0; tb < j->n_tok; tb += TOK_BLOCK) {
        int64_t te = tb + TOK_BLOCK < j->n_tok ? tb + TOK_BLOCK : j->n_tok;
        for (int64_t i = i0; i < i1; i += HR_TILE_R) {
            int64_t ie = i + HR_TILE_R <= i1 ? i + HR_TILE_R : i1;
            int64_t t = tb;
            if (j->tile && ie - i == HR_TILE_R)
                while (t + HR_TILE_C <= te && gm_tile(j, i, t)) t += HR_TILE_C;
            for (int64_t r = i; r < ie; r++)
                for (int64_t u = t; u < te; u++)
                    dot(n, &j->Y[u * ni + r], w + j->idx[r] * rb, j->xq + u * j->xs);
        }
    }
}

/* Item it's job, all but its prepared activations; *need: the scratch bytes they take. */
static int gm_setup(const hr_cpu *c, gm_job *j, const hr_sparse_item *it, size_t *need, hr_err *e) {
    const hr_mat *W = it->W;
    if (!it->X || (!it->Y && it->n_idx > 0)) return hr_errf(e, "gather_matmul: missing argument");
    if (W && (W->type >= HR_TYPE_MAX || !c->k->vec_dot[W->type] || !c->k->act_prep[W->type]))
        return hr_errf(e, "gather_matmul: weight type %u has no CPU kernel", W->type);
    if (check_mat("gather_matmul", W, it->n_tok, it->idx, it->n_idx, e) < 0) return -1;
    const hr_kernels_ext *x = hr_kernels_ext_of(c->k);
    *j = (gm_job){.k = c->k, .tile = x->tile[W->type], .rows2 = x->rows2[W->type], .rows4 = x->rows4[W->type],
                  .gather4 = x->gather4[W->type], .W = W, .X = it->X, .n_tok = it->n_tok, .idx = it->idx,
                  .n_idx = it->n_idx, .Y = it->Y};
    *need = 0;
    if (!it->n_idx) return 0; /* nothing to compute: nothing prepared */
    if (W->type == HR_F32) {
        j->xq = (const char *)it->X;
        j->xs = (size_t)W->n_in * sizeof(float);
        return 0;
    }
    j->xs = (hr_act_bytes(W->type, W->n_in) + 63) & ~(size_t)63;
    if (it->n_tok >= HR_TILE_C && j->tile && x->tile_x[W->type]) { /* tiles over rows re-laid once here, as hr_matmul's */
        j->tile = x->tile_x[W->type];
        j->xts = (x->tile_xbytes[W->type](W->n_in) + 63) & ~(size_t)63;
    }
    if ((uint64_t)it->n_tok > SIZE_MAX / 2 / (j->xs + j->xts)) return hr_errf(e, "gather_matmul: batch too large");
    *need = (j->xs + j->xts) * (size_t)it->n_tok;
    return 0;
}

/* A group's run: item i's steps are the range run's indices [first[i], first[i + 1]). Each
 * output is one dot product whichever span computes it, so the split changes no value. */
typedef struct {
    gm_job *jobs;
    int *first;
    int n;
} gm_group;

/* Item i's steps [s0, s1) as one span of its outputs. */
static void gm_grp_item(void *arg, int i, int64_t s0, int64_t s1) {
    const gm_job *j = &((const gm_group *)arg)->jobs[i];
    const int64_t i1 = s1 * j->step;
    gm_span(j, s0 * j->step, i1 < j->n_idx ? i1 : j->n_idx);
}

/* Each item's steps: about STEP_BYTES of rows times tokens, a multiple of 4 outputs (gather4's
 * and the tiles' groups); -1 when the group is too large to index. */
static int gm_grp_steps(gm_group *g) {
    g->first[0] = 0;
    for (int i = 0; i < g->n; i++) {
        gm_job *j = &g->jobs[i];
        const int64_t want = STEP_BYTES / ((int64_t)j->W->row_bytes * j->n_tok);
        j->step = want <= 4 ? 4 : want / 4 * 4;
        const int64_t k = (j->n_idx + j->step - 1) / j->step;
        if (k > INT_MAX - g->first[i]) return -1;
        g->first[i + 1] = g->first[i] + (int)k;
    }
    return 0;
}

/* Groups up to this size (a decoded token's experts) keep their jobs on the stack. */
#define GRP_STACK 16

static int gather_run(hr_cpu *c, const hr_sparse_item *items, int n, hr_err *e) {
    gm_job jobs_s[GRP_STACK];
    int first_s[GRP_STACK + 1];
    size_t need_s[GRP_STACK], total = 0;
    const bool heap = n > GRP_STACK;
    gm_group g = {.jobs = heap ? malloc(sizeof(gm_job) * (size_t)n) : jobs_s,
                  .first = heap ? malloc(sizeof(int) * (size_t)(n + 1)) : first_s, .n = n};
    size_t *need = heap ? malloc(sizeof(size_t) * (size_t)n) : need_s;
    int r = -1;
    if (!g.jobs || !g.first || !need) {
        hr_errf(e, "out of memory for a group of %d gathered products", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (gm_setup(c, &g.jobs[i], &items[i], &need[i], e)) goto done;
        if (total > SIZE_MAX / 2 - need[i]) {
            hr_errf(e, "gather_matmul: batch too large");
            goto done;
        }
        total += need[i];
    }
    if (total && hr_cpu_reserve(c, total, e) < 0) goto done;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        gm_job *j = &g.jobs[i];
        if (!need[i]) continue; /* F32 reads X itself; an empty item reads nothing */
        j->xq = (const char *)c->scratch + off, off += need[i];
        if (j->xts) j->xt = (char *)j->xq + j->xs * (size_t)j->n_tok;
        if (j->n_tok * j->W->n_in >= PAR_PREP_ELEMS && j->n_tok > 1) hr_pool_run(c->pool, gm_prep_task, j);
        else gm_prep_task(j, 0, 1);
    }
    if (gm_grp_steps(&g) < 0) {
        hr_errf(e, "gather_matmul: a group of %d products too large to split", n);
        goto done;
    }
    hr_pool_run_group(c->pool, g.first, n, gm_grp_item, &g);
    r = 0;
done:
    if (heap) free(g.jobs), free(g.first), free(need);
    return r;
}

/* ---------------------------------------------------------------- axpy kernel choice */

#if defined(HR_X86) && (defined(__GNUC__) || defined(__clang__))
static int cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
static int cpu_has_avx512(void) {
    __builtin_cpu_init();
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#else
static int cpu_has_avx2(void) { return 0; }
static int cpu_has_avx512(void) { return 0; }
#endif

const hr_axpy_kernels *hr_axpy_scalar(void) { return hr_axpy_table_scalar(); }

const hr_axpy_kernels *hr_axpy_avx2(void) {
    const hr_axpy_kernels *k = hr_axpy_table_avx2();
    return k && cpu_has_avx2() ? k : NULL;
}

const hr_axpy_kernels *hr_axpy_avx512(void) {
    const hr_axpy_kernels *k = hr_axpy_table_avx512();
    return k && cpu_has_avx512() ? k : NULL;
}

const hr_axpy_kernels *hr_axpy_best(void) {
    const char *env = getenv("HEARTH_KERNELS");
    if (env && *env) {
        const hr_axpy_kernels *k = NULL;
        if (strcmp(env, "scalar") == 0) k = hr_axpy_scalar();
        else if (strcmp(env, "avx2") == 0) k = hr_axpy_avx2();
        else if (strcmp(env, "avx512") == 0) k = hr_axpy_avx512();
        if (k) return k; /* an unavailable request falls back to the best below */
    }
    const hr_axpy_kernels *k;
    if ((k = hr_axpy_avx512())) return k;
    if ((k = hr_axpy_avx2())) return k;
    return hr_axpy_scalar();
}

/* ---------------------------------------------------------------- axpy workspace */

void hr_sparse_ws_init(hr_sparse_ws *ws) { memset(ws, 0, sizeof *ws); }

void hr_sparse_ws_free(hr_sparse_ws *ws) {
    if (!ws) return;
    free(ws->part);
    memset(ws, 0, sizeof *ws);
}

/* Chunks of an axpy: ranges of the matrix's rows (neurons), fixed by the thread count
 * and the row count alone. A token's output is the chunk-ordered sum of per-chunk sums
 * taken in index order; entries with a zero coefficient add exactly nothing, so a token's
 * result does not depend on which other tokens share the batch or on the union of
 * neurons the batch computes (as long as idx is ascending). */
static int ax_chunks(int nth, int64_t n_rows) { return n_chunks(nth, n_rows, CHUNKS_PER_THREAD); }

/* Floats of partials for `chunks` chunks of n_tok tokens (0 on overflow). */
static size_t ws_need(int chunks, int64_t n_tok, int64_t n_in) {
    if (chunks <= 1) return 0;
    if ((uint64_t)n_tok > SIZE_MAX / 4 / (uint64_t)n_in / (uint64_t)(chunks - 1)) return 0;
    return (size_t)(chunks - 1) * (size_t)n_tok * (size_t)n_in;
}

static int ws_grow(hr_sparse_ws *ws, size_t need, hr_err *e) {
    if (need <= ws->part_floats) return 0;
    void *p = NULL;
    size_t bytes = (need * sizeof(float) + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, bytes) != 0) return hr_errf(e, "out of memory for %zu bytes of partial sums", bytes);
    free(ws->part);
    ws->part = p;
    ws->part_floats = need;
    return 0;
}

int hr_sparse_reserve(hr_sparse_ws *ws, const hr_cpu *c, int64_t n_tok, int64_t n_in, hr_err *e) {
    if (!ws || !c || !c->pool) return hr_errf(e, "sparse_reserve: missing argument");
    if (n_tok < 1 || n_in < 1) return hr_errf(e, "sparse_reserve: empty shape");
    const int nth = hr_pool_threads(c->pool);
    const int64_t many = (int64_t)nth * CHUNKS_PER_THREAD * MIN_CHUNK_ROWS; /* the most chunks */
    const int chunks = ax_chunks(nth, many);
    const size_t need = ws_need(chunks, n_tok < AX_TOK_BLOCK ? n_tok : AX_TOK_BLOCK, n_in);
    if (chunks > 1 && !need) return hr_errf(e, "sparse_reserve: workspace too large");
    return ws_grow(ws, need, e);
}

/* ---------------------------------------------------------------- axpy */

/* A fused FFN's coefficients (hr_sparse_ffn_fused), made 4 positions at a time as the axpy
 * reaches them: gate and up rows as gm_decode computes them (gather4 for a group of 4, vec_dot
 * otherwise: the same bits), then the activation. */
typedef struct {
    const hr_kernels *k;
    hr_gather4_fn gather4;
    const hr_mat *gate, *up;
    const char *xq;
    float *G, *U, *A;
    hr_ffn_act_fn act;
    void *act_arg;
} ffn_fill;

typedef struct {
    hr_axpy_fn fn;
    hr_axpy_panel_fn panel; /* batches: the table's panel kernel, or NULL (then fn) */
    const hr_mat *Wt;
    const ffn_fill *fill; /* NULL: A is given */
    const float *A;      /* the group's first token */
    int64_t n_tok;       /* tokens of this group (<= AX_TOK_BLOCK) */
    int64_t a_stride;    /* floats between tokens' coefficient rows (n_idx) */
    const int32_t *idx;
    int64_t n_idx;
    bool sorted;         /* idx ascending: chunks are row ranges */
    float *Y;            /* the group's first output row */
    float *part;
    int chunks;
} ax_job;

/* The rows at idx positions p.. (HR_AXPY_ROWS of them, the last repeated past i1), which
 * the kernel prefetches while it computes the current ones: the next call's rows, but
 * for rows it will skip (zero coefficients). NULL when none are left. */
static const void *const *next_rows(const ax_job *j, int64_t p, int64_t i1, const void **nx) {
    if (p >= i1) return NULL;
    const char *w = j->Wt->data;
    for (int r = 0; r < HR_AXPY_ROWS; r++) nx[r] = w + j->idx[p + r < i1 ? p + r : i1 - 1] * hr_mat_stride(j->Wt);
    return nx;
}

/* Products of W's rows at idx positions [p, q) into out[p..q); gather4 prefetches the rows of
 * the 4 positions after them. */
static void fill_rows(const ffn_fill *f, const hr_mat *W, const ax_job *j, int64_t p, int64_t q, float *out) {
    const size_t st = hr_mat_stride(W);
    const char *w = W->data;
    if (q - p < 4) {
        for (int64_t i = p; i < q; i++) f->k->vec_dot[W->type](W->n_in, out + i, w + j->idx[i] * st, f->xq);
        return;
    }
    const void *rows[4], *nx[4];
    for (int r = 0; r < 4; r++) {
        rows[r] = w + j->idx[p + r] * st;
        nx[r] = w + j->idx[p + 4 + r < j->n_idx ? p + 4 + r : j->n_idx - 1] * st;
    }
    f->gather4(W->n_in, rows, nx, f->xq, out + p);
}

static void fill_at(const ax_job *j, int64_t p, int64_t q) {
    const ffn_fill *f = j->fill;
    fill_rows(f, f->gate, j, p, q, f->G);
    fill_rows(f, f->up, j, p, q, f->U);
    f->act(f->A + p, f->G + p, f->U + p, q - p, f->act_arg);
}

/* One token: rows with a non-zero coefficient, HR_AXPY_ROWS per kernel call. The kernel
 * fetches the next call's rows as it goes, a call ahead: against a burst of prefetches of
 * the next rows' first 16 lines here, 25-33% more GB/s for Q4_0, Q8_0, Q4_K,
 * Q6_K, IQ4_NL at 30% of 11008 rows, one thread, Zen 4; two calls ahead gained nothing. */
static void ax_decode(const ax_job *j, int64_t i0, int64_t i1, float *out) {
    const size_t rb = hr_mat_stride(j->Wt); /* from a row to the next */
    const char *w = j->Wt->data;
    const void *rows[HR_AXPY_ROWS], *nx[HR_AXPY_ROWS];
    float a[HR_AXPY_ROWS];
    int g = 0;
    for (int64_t i = i0; i < i1; i++) {
        if (j->fill && (i - i0) % 4 == 0) fill_at(j, i, i + 4 < i1 ? i + 4 : i1);
        if (j->A[i] == 0.0f) continue;
        rows[g] = w + j->idx[i] * rb;
        a[g] = j->A[i];
        if (++g == HR_AXPY_ROWS) {
            j->fn(j->Wt->n_in, g, rows, next_rows(j, i + 1, i1, nx), a, 1, out, 0);
            g = 0;
        }
    }
    if (g) j->fn(j->Wt->n_in, g, rows, NULL, a, 1, out, 0);
}

/* Several tokens (one group): each row is visited once, and skipped if all of the group's
 * coefficients for it are zero. The rows go to the kernel in groups with their coefficients
 * per token (a[t * P + g]): HR_AXPY_ROWS at a time to the axpy, which fetches the next group
 * as it goes, or, where the table has a panel kernel, up to AX_PANEL rows or about
 * AX_PANEL_BYTES of them (the panel is swept once per block of outputs, so it should stay in
 * L2). Either way every output gets its terms in row order. */
#define AX_PANEL HR_AXPY_PANEL_MAX
#define AX_PANEL_BYTES (512 * 1024)
static int ax_group_rows(const ax_job *j) {
    if (!j->panel) return HR_AXPY_ROWS;
    const size_t fit = AX_PANEL_BYTES / j->Wt->row_bytes;
    return fit >= AX_PANEL ? AX_PANEL : fit < 16 ? 16 : (int)fit;
}

static void ax_batch(const ax_job *j, int64_t i0, int64_t i1, float *out) {
    const int64_t n = j->Wt->n_in, nt = j->n_tok;
    const size_t rb = hr_mat_stride(j->Wt); /* from a row to the next */
    const char *w = j->Wt->data;
    const int P = ax_group_rows(j);
    const void *rows[AX_PANEL], *nx[HR_AXPY_ROWS];
    float a[AX_TOK_BLOCK * AX_PANEL];
    int g = 0;
    for (int64_t i = i0; i < i1; i++) {
        int any = 0;
        for (int64_t t = 0; t < nt; t++) {
            a[t * P + g] = j->A[t * j->a_stride + i];
            any |= j->A[t * j->a_stride + i] != 0.0f;
        }
        if (!any) continue;
        rows[g] = w + j->idx[i] * rb;
        if (++g < P) continue;
        if (j->panel) j->panel(n, g, rows, a, (size_t)P, nt, out, (size_t)n);
        else j->fn(n, g, rows, next_rows(j, i + 1, i1, nx), a, nt, out, (size_t)n);
        g = 0;
    }
    if (g && j->panel) j->panel(n, g, rows, a, (size_t)P, nt, out, (size_t)n);
    else if (g) j->fn(n, g, rows, NULL, a, nt, out, (size_t)n);
}

/* First position in idx[lo..hi) whose row is >= row (idx ascending). */
static int64_t lower_bound(const int32_t *idx, int64_t lo, int64_t hi, int64_t row) {
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (idx[mid] < row) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The idx positions chunk ith covers: its row range when idx is ascending, else an even
 * split of the list (still deterministic, but then batch-dependent). */
static void ax_range(const ax_job *j, int ith, int nth, int64_t *i0, int64_t *i1) {
    if (!j->sorted) {
        chunk_range(j->n_idx, ith, nth, 1, i0, i1);
        return;
    }
    int64_t r0, r1;
    chunk_range(j->Wt->n_out, ith, nth, 1, &r0, &r1);
    *i0 = lower_bound(j->idx, 0, j->n_idx, r0);
    *i1 = lower_bound(j->idx, *i0, j->n_idx, r1);
}

static void ax_task(void *arg, int ith, int nth) {
    const ax_job *j = arg;
    const size_t len = (size_t)j->n_tok * (size_t)j->Wt->n_in;
    float *out = ith == 0 ? j->Y : j->part + (size_t)(ith - 1) * len;
    memset(out, 0, len * sizeof *out);
    int64_t i0, i1;
    ax_range(j, ith, nth, &i0, &i1);
    if (j->n_tok == 1) ax_decode(j, i0, i1, out);
    else ax_batch(j, i0, i1, out);
}

/* Y += partials 1.. in chunk order, over slice ith of the outputs. */
static void ax_sum_task(void *arg, int ith, int nth) {
    const ax_job *j = arg;
    const int64_t len = j->n_tok * j->Wt->n_in;
    int64_t k0, k1;
    chunk_range(len, ith, nth, 16, &k0, &k1);
    for (int p = 1; p < j->chunks; p++) {
        const float *src = j->part + (size_t)(p - 1) * (size_t)len;
        for (int64_t k = k0; k < k1; k++) j->Y[k] += src[k];
    }
}

static bool ascending(const int32_t *idx, int64_t n) {
    for (int64_t i = 1; i < n; i++)
        if (idx[i] <= idx[i - 1]) return false;
    return true;
}

/* One group of up to AX_TOK_BLOCK tokens: chunks in parallel, then the ordered sum. */
static void ax_group(hr_cpu *c, ax_job *j) {
    if (j->chunks == 1) {
        ax_task(j, 0, 1);
        return;
    }
    hr_pool_run_chunks(c->pool, ax_task, j, j->chunks);
    if (j->n_tok * j->Wt->n_in >= PAR_SUM_FLOATS) hr_pool_run(c->pool, ax_sum_task, j);
    else ax_sum_task(j, 0, 1);
}

/* What an axpy over Wt's rows needs, for groups of `group` tokens: the kernel of its type
 * (ws->ax, chosen once), the chunks of its rows and the workspace for their partial sums. */
static int ax_prepare(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *Wt, int64_t group, const char *op, int *chunks,
                      hr_err *e) {
    if (!ws->ax) ws->ax = hr_axpy_best();
    if (Wt->type >= HR_TYPE_MAX || !ws->ax->axpy[Wt->type])
        return hr_errf(e, "%s: weight type %u has no CPU kernel", op, Wt->type);
    *chunks = ax_chunks(hr_pool_threads(c->pool), Wt->n_out);
    const size_t need = ws_need(*chunks, group, Wt->n_in);
    if (*chunks > 1 && !need) return hr_errf(e, "%s: workspace too large", op);
    return ws_grow(ws, need, e) < 0 ? -1 : 0;
}

static int axpy_run(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *Wt, const float *A, int64_t n_tok,
                    const int32_t *idx, int64_t n_idx, float *Y, hr_err *e) {
    if (!c || !c->pool || !ws || !Y || (!A && n_idx > 0)) return hr_errf(e, "sparse_axpy: missing argument");
    if (check_mat("sparse_axpy", Wt, n_tok, idx, n_idx, e) < 0) return -1;
    const int64_t group = n_tok < AX_TOK_BLOCK ? n_tok : AX_TOK_BLOCK;
    int chunks;
    if (ax_prepare(c, ws, Wt, group, "sparse_axpy", &chunks, e)) return -1;
    const bool sorted = ascending(idx, n_idx);
    for (int64_t t0 = 0; t0 < n_tok; t0 += group) {
        ax_job j = {.fn = ws->ax->axpy[Wt->type], .panel = Wt->n_in % 32 ? NULL : ws->ax->panel[Wt->type],
                    .Wt = Wt, .A = A + t0 * n_idx, .a_stride = n_idx,
                    .n_tok = n_tok - t0 < group ? n_tok - t0 : group, .idx = idx, .n_idx = n_idx,
                    .sorted = sorted, .Y = Y + t0 * Wt->n_in, .part = ws->part, .chunks = chunks};
        ax_group(c, &j);
    }
    return 0;
}

/* hr_sparse_axpy_group's run: its items' token groups as ax_jobs, each with the chunks and
 * order its own hr_sparse_axpy_ws call gives it; a round's jobs' chunks are the pool's indices
 * [first[i], first[i + 1]), then their partials are added, job by job, in chunk order. */
typedef struct {
    ax_job *jobs;
    int *first;
    int n;
} ax_round;

static void ax_grp_task(void *arg, int ith, int nth) {
    (void)nth;
    const ax_round *g = arg;
    const int i = hr_chunk_owner(g->first, g->n, ith);
    ax_task(&g->jobs[i], ith - g->first[i], g->first[i + 1] - g->first[i]);
}

static void ax_grp_sum_task(void *arg, int ith, int nth) {
    const ax_round *g = arg;
    for (int i = 0; i < g->n; i++)
        if (g->jobs[i].chunks > 1) ax_sum_task(&g->jobs[i], ith, nth);
}

/* Jobs [0, n) in rounds whose partials fit the workspace as reserved (grown only where one job
 * needs more): each round one pool run for the chunks and one (or the caller) for the sums. A
 * decoded token's experts fit hr_sparse_reserve's n_batch tokens in one round. */
static int ax_rounds(hr_cpu *c, hr_sparse_ws *ws, ax_job *jobs, int *first, int n, hr_err *e) {
    size_t most = ws->part_floats;
    for (int i = 0; i < n; i++) {
        const size_t need = ws_need(jobs[i].chunks, jobs[i].n_tok, jobs[i].Wt->n_in);
        most = need > most ? need : most;
    }
    for (int i0 = 0; i0 < n;) {
        size_t used = 0, sum = 0;
        int i1 = i0;
        for (; i1 < n; i1++) {
            const size_t need = ws_need(jobs[i1].chunks, jobs[i1].n_tok, jobs[i1].Wt->n_in);
            if (i1 > i0 && used + need > most) break;
            used += need;
            if (jobs[i1].chunks > 1) sum += (size_t)jobs[i1].n_tok * (size_t)jobs[i1].Wt->n_in;
        }
        if (ws_grow(ws, used, e) < 0) return -1;
        ax_round g = {.jobs = jobs + i0, .first = first, .n = i1 - i0};
        size_t off = 0;
        first[0] = 0;
        for (int i = 0; i < g.n; i++) {
            ax_job *j = &g.jobs[i];
            j->part = ws->part + off;
            off += ws_need(j->chunks, j->n_tok, j->Wt->n_in);
            first[i + 1] = first[i] + j->chunks;
        }
        if (first[g.n] > 65535) return hr_errf(e, "sparse_axpy: a group of %d chunks (at most 65535)", first[g.n]);
        hr_pool_run_chunks(c->pool, ax_grp_task, &g, first[g.n]);
        if (sum >= PAR_SUM_FLOATS) hr_pool_run(c->pool, ax_grp_sum_task, &g);
        else if (sum) ax_grp_sum_task(&g, 0, 1);
        i0 = i1;
    }
    return 0;
}

/* Item it's token groups appended to jobs[*n..). */
static int ax_item_jobs(hr_cpu *c, hr_sparse_ws *ws, const hr_sparse_item *it, ax_job *jobs, int *n, hr_err *e) {
    if (!it->Y || (!it->X && it->n_idx > 0)) return hr_errf(e, "sparse_axpy: missing argument");
    if (check_mat("sparse_axpy", it->W, it->n_tok, it->idx, it->n_idx, e) < 0) return -1;
    const hr_mat *Wt = it->W;
    if (Wt->type >= HR_TYPE_MAX || !ws->ax->axpy[Wt->type])
        return hr_errf(e, "sparse_axpy: weight type %u has no CPU kernel", Wt->type);
    const int chunks = ax_chunks(hr_pool_threads(c->pool), Wt->n_out);
    const int64_t group = it->n_tok < AX_TOK_BLOCK ? it->n_tok : AX_TOK_BLOCK;
    if (chunks > 1 && !ws_need(chunks, group, Wt->n_in)) return hr_errf(e, "sparse_axpy: workspace too large");
    const bool sorted = ascending(it->idx, it->n_idx);
    for (int64_t t0 = 0; t0 < it->n_tok; t0 += group)
        jobs[(*n)++] = (ax_job){.fn = ws->ax->axpy[Wt->type], .panel = Wt->n_in % 32 ? NULL : ws->ax->panel[Wt->type],
                                .Wt = Wt, .A = it->X + t0 * it->n_idx, .a_stride = it->n_idx,
                                .n_tok = it->n_tok - t0 < group ? it->n_tok - t0 : group, .idx = it->idx,
                                .n_idx = it->n_idx, .sorted = sorted, .Y = it->Y + t0 * Wt->n_in, .chunks = chunks};
    return 0;
}

static int axpy_group_run(hr_cpu *c, hr_sparse_ws *ws, const hr_sparse_item *items, int n, hr_err *e) {
    if (!ws->ax) ws->ax = hr_axpy_best();
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!items[i].W || items[i].n_tok < 1) return hr_errf(e, "sparse_axpy: missing matrix or tokens");
        total += (items[i].n_tok + AX_TOK_BLOCK - 1) / AX_TOK_BLOCK;
    }
    if (total > 65535) return hr_errf(e, "sparse_axpy: a group of %lld token groups (at most 65535)", (long long)total);
    ax_job jobs_s[GRP_STACK];
    int first_s[GRP_STACK + 1];
    const bool heap = total > GRP_STACK;
    ax_job *jobs = heap ? malloc(sizeof(ax_job) * (size_t)total) : jobs_s;
    int *first = heap ? malloc(sizeof(int) * (size_t)(total + 1)) : first_s, nj = 0, r = -1;
    if (!jobs || !first) hr_errf(e, "out of memory for a group of %d axpys", n);
    else {
        r = 0;
        for (int i = 0; i < n && !r; i++) r = ax_item_jobs(c, ws, &items[i], jobs, &nj, e);
        if (!r) r = ax_rounds(c, ws, jobs, first, nj, e);
    }
    if (heap) free(jobs), free(first);
    return r;
}

static int ffn_fused_run(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *gate, const hr_mat *up, const hr_mat *down_t,
                         const float *x, const int32_t *idx, int64_t n_idx, hr_ffn_act_fn act, void *act_arg, float *G,
                         float *U, float *A, float *Y, hr_err *e) {
    if (!c || !c->pool || !ws || !x || !act || !Y || (n_idx > 0 && (!G || !U || !A)))
        return hr_errf(e, "sparse_ffn: missing argument");
    if (!gate || !up || gate->type != up->type || gate->n_in != up->n_in || gate->n_out != up->n_out ||
        !down_t || down_t->n_out != gate->n_out || !hr_sparse_ffn_fits(c, gate))
        return hr_errf(e, "sparse_ffn: gate and up must share type and shape, with a gather4 kernel and down_t's rows");
    /* the three share n_out: the neuron list is checked once */
    if (check_mat("sparse_ffn", gate, 1, idx, n_idx, e) < 0 || check_mat("sparse_ffn", up, 1, NULL, 0, e) < 0 ||
        check_mat("sparse_ffn", down_t, 1, NULL, 0, e) < 0)
        return -1;
    if (!ascending(idx, n_idx)) return hr_errf(e, "sparse_ffn: the neuron list must be ascending");
    int chunks;
    if (ax_prepare(c, ws, down_t, 1, "sparse_ffn", &chunks, e)) return -1;
    if (hr_cpu_reserve(c, hr_act_bytes(gate->type, gate->n_in), e) < 0) return -1;
    c->k->act_prep[gate->type](x, c->scratch, gate->n_in);
    const ffn_fill f = {.k = c->k, .gather4 = hr_kernels_ext_of(c->k)->gather4[gate->type], .gate = gate, .up = up,
                        .xq = c->scratch, .G = G, .U = U, .A = A, .act = act, .act_arg = act_arg};
    ax_job j = {.fn = ws->ax->axpy[down_t->type], .Wt = down_t, .fill = &f, .A = A, .a_stride = n_idx, .n_tok = 1,
                .idx = idx, .n_idx = n_idx, .sorted = true, .Y = Y, .part = ws->part, .chunks = chunks};
    ax_group(c, &j);
    return 0;
}

bool hr_sparse_ffn_fits(const hr_cpu *c, const hr_mat *gate) {
    return c && gate && gate->type < HR_TYPE_MAX && hr_kernels_ext_of(c->k)->gather4[gate->type] &&
           c->k->vec_dot[gate->type] && c->k->act_prep[gate->type];
}

/* ---- profiled entry points (prof.h): the work above, timed when c->prof is set ---- */

/* Bytes a gathered product moves: its rows, its activations and outputs. */
static uint64_t gm_bytes(const hr_sparse_item *it) {
    return (uint64_t)it->n_idx * it->W->row_bytes + (uint64_t)it->n_tok * (uint64_t)(it->W->n_in + it->n_idx) * 4;
}

int hr_gather_group(hr_cpu *c, const hr_sparse_item *items, int n_items, hr_err *e) {
    if (!c || !c->pool || n_items < 0 || (n_items && !items)) return hr_errf(e, "gather_matmul: missing argument");
    if (n_items > 65535) return hr_errf(e, "gather_matmul: a group of %d products (at most 65535)", n_items);
    if (!c->prof || !n_items || !items[0].W) return gather_run(c, items, n_items, e);
    uint64_t bytes = 0;
    for (int i = 0; i < n_items; i++) bytes += items[i].W ? gm_bytes(&items[i]) : 0;
    const hr_prof_mark m = hr_prof_begin(c->prof);
    const int r = gather_run(c, items, n_items, e);
    hr_prof_end(c->prof, m, HR_PROF_GATHER, items[0].W->type, bytes);
    return r;
}

int hr_gather_matmul(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                     float *Y, hr_err *e) {
    const hr_sparse_item it = {.W = W, .X = X, .n_tok = n_tok, .idx = idx, .n_idx = n_idx, .Y = Y};
    return hr_gather_group(c, &it, 1, e);
}

/* Rows the axpy really reads: those with a non-zero coefficient in a group of tokens. */
static uint64_t axpy_rows_read(const float *A, int64_t n_tok, int64_t n_idx) {
    uint64_t rows = 0;
    for (int64_t t0 = 0; t0 < n_tok; t0 += AX_TOK_BLOCK)
        for (int64_t i = 0; i < n_idx; i++) {
            bool any = false;
            for (int64_t t = t0; t < n_tok && t < t0 + AX_TOK_BLOCK && !any; t++) any = A[t * n_idx + i] != 0.0f;
            rows += any;
        }
    return rows;
}

int hr_sparse_axpy_ws(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *Wt, const float *A, int64_t n_tok,
                      const int32_t *idx, int64_t n_idx, float *Y, hr_err *e) {
    if (!c || !c->prof || !Wt || !A) return axpy_run(c, ws, Wt, A, n_tok, idx, n_idx, Y, e);
    /* counted before the clock starts: the scan is the profiler's cost, not the axpy's */
    const uint64_t bytes = axpy_rows_read(A, n_tok, n_idx) * Wt->row_bytes + (uint64_t)n_tok * (uint64_t)(n_idx + Wt->n_in) * 4;
    const hr_prof_mark m = hr_prof_begin(c->prof);
    const int r = axpy_run(c, ws, Wt, A, n_tok, idx, n_idx, Y, e);
    hr_prof_end(c->prof, m, HR_PROF_AXPY, Wt->type, bytes);
    return r;
}

int hr_sparse_axpy_group(hr_cpu *c, hr_sparse_ws *ws, const hr_sparse_item *items, int n_items, hr_err *e) {
    if (!c || !c->pool || !ws || n_items < 0 || (n_items && !items)) return hr_errf(e, "sparse_axpy: missing argument");
    if (n_items > 65535) return hr_errf(e, "sparse_axpy: a group of %d products (at most 65535)", n_items);
    if (!c->prof || !n_items || !items[0].W || !items[0].X) return axpy_group_run(c, ws, items, n_items, e);
    uint64_t bytes = 0; /* counted before the clock starts, as for one axpy */
    for (int i = 0; i < n_items; i++) {
        const hr_sparse_item *it = &items[i];
        if (it->W && it->X && it->n_tok > 0)
            bytes += axpy_rows_read(it->X, it->n_tok, it->n_idx) * it->W->row_bytes +
                     (uint64_t)it->n_tok * (uint64_t)(it->n_idx + it->W->n_in) * 4;
    }
    const hr_prof_mark m = hr_prof_begin(c->prof);
    const int r = axpy_group_run(c, ws, items, n_items, e);
    hr_prof_end(c->prof, m, HR_PROF_AXPY, items[0].W->type, bytes);
    return r;
}

int hr_sparse_ffn_fused(hr_cpu *c, hr_sparse_ws *ws, const hr_mat *gate, const hr_mat *up, const hr_mat *down_t,
                        const float *x, const int32_t *idx, int64_t n_idx, hr_ffn_act_fn act, void *act_arg, float *G,
                        float *U, float *A, float *Y, hr_err *e) {
    if (!c || !c->prof || !gate || !down_t)
        return ffn_fused_run(c, ws, gate, up, down_t, x, idx, n_idx, act, act_arg, G, U, A, Y, e);
    const hr_prof_mark m = hr_prof_begin(c->prof);
    const int r = ffn_fused_run(c, ws, gate, up, down_t, x, idx, n_idx, act, act_arg, G, U, A, Y, e);
    /* gate and up rows of every neuron, down rows of those that count */
    const uint64_t bytes = (uint64_t)n_idx * 2 * gate->row_bytes + (r ? 0 : axpy_rows_read(A, 1, n_idx)) * down_t->row_bytes +
                           (uint64_t)(3 * n_idx + 2 * gate->n_in) * 4;
    hr_prof_end(c->prof, m, HR_PROF_FFN, down_t->type, bytes);
    return r;
}

int hr_sparse_axpy(hr_cpu *c, const hr_mat *Wt, const float *A, int64_t n_tok, const int32_t *idx, int64_t n_idx,
                   float *Y, hr_err *e) {
    hr_sparse_ws ws;
    hr_sparse_ws_init(&ws);
    int rc = hr_sparse_axpy_ws(c, &ws, Wt, A, n_tok, idx, n_idx, Y, e);
    hr_sparse_ws_free(&ws);
    return rc;
}
