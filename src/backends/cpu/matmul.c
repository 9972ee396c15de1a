/* Y = X W^T over hr_mat weights. Activations are prepared once per call; output
 * rows go to the threads as a range run (pool.h: a contiguous share each, the idle taking
 * half of the busiest share's rest). Decode (one token) streams
 * each weight row once, a memory-bandwidth problem: 4 rows per kernel call (rows4) share
 * the activation-side work and keep several DRAM streams in flight. Prompt batches
 * use register tiles (HR_TILE_R rows x HR_TILE_C tokens) so each weight block loaded
 * serves several tokens, over token blocks small enough for the prepared activations
 * to stay in L2. Types with a tile_x (AVX2 and AVX-512: Q8_0, Q4_0, Q4_K, Q5_K, IQ4_XS;
 * AVX-512 also F16, BF16, Q6_K) get their prepared rows re-laid once per call into the lane
 * order their tiles load, instead of each tile re-shuffling them for every pair of weight
 * rows; where the table has a wider tile over those rows (tile_xw: 4 rows x 4 tokens, or
 * 2 x 8 for the K-quants), it takes the rows it can. Every (row, token) result is the same
 * whichever path computed it. */
#include "matmul.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"
#include "prof.h"

#define TOK_BLOCK 64         /* tokens whose prepared rows are reused from L2 */
#define PAR_PREP_ELEMS 16384 /* below this, preparing on the caller beats a pool run */
#define STEP_BYTES 32768     /* weights per range step: ~1.5 us of a decode, ~15 us of a 64-token batch */

int hr_cpu_init(hr_cpu *c, int n_threads, hr_err *e) {
    memset(c, 0, sizeof *c);
    c->pool = hr_pool_new(n_threads, e);
    if (!c->pool) return -1;
    c->k = hr_kernels_best();
    return 0;
}

void hr_cpu_free(hr_cpu *c) {
    if (!c) return;
    hr_pool_free(c->pool);
    free(c->scratch);
    free(c->prof);
    memset(c, 0, sizeof *c);
}

int hr_cpu_reserve(hr_cpu *c, size_t bytes, hr_err *e) {
    if (bytes <= c->scratch_bytes) return 0;
    size_t cap = bytes + bytes / 4;
    cap = (cap + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, cap) != 0) return hr_errf(e, "out of memory for %zu bytes of activations", cap);
    free(c->scratch);
    c->scratch = p;
    c->scratch_bytes = cap;
    return 0;
}

/* Several activation rows: prepared (xq, xs bytes apart) and, where tile_x is set, re-laid
 * (xt, xts apart); the kernels that read them. */
typedef struct {
    hr_tile_fn tile, tile_x, tile_xw;
    int64_t xw_rows, xw_cols; /* tile_xw's shape */
    hr_vec_dot_fn dot;
    const char *xq, *xt;
    size_t xs, xts;
} tile_src;

/* tile_x and the wider tile of the table for type, over rows re-laid by its tile_xprep. */
static void use_relaid(tile_src *s, const hr_kernels_ext *x, uint32_t type) {
    s->tile_x = x->tile_x[type], s->tile_xw = x->tile_xw[type];
    s->xw_rows = x->xw_rows[type], s->xw_cols = x->xw_cols[type];
}

typedef struct {
    const hr_kernels *k;
    hr_tile_fn rows2, rows4, rows16;
    tile_src ts; /* the prompt tiles' rows and kernels (tile_x NULL: they read xq only) */
    const hr_mat *W;
    const float *X;
    void (*xprep)(const void *xq, void *xt, int64_t n); /* tile_xprep, or NULL */
    int64_t n_tok;
    float *Y;
    const hr_mat *W1; /* hr_matmul_pair's second matrix (same type and shape), or NULL */
    float *Y1;
    const hr_mm_epi *ep; /* run on each chunk's rows after they are computed, or NULL */
    /* 16 x 16 tiles over panels of 16 prepared rows (tile16_prep), pb bytes each, or NULL */
    void (*tile16)(int64_t n, const void *w, size_t ws, const void *panels, size_t pb, float *y, size_t ys, int n_x);
    void (*t16prep)(const void *xq, size_t xs, int n_x, void *panel, int64_t n);
    char *panels;
    size_t pb;
    int64_t align; /* span heights: a multiple of this */
    int64_t step;  /* a group's rows per step */
} mm_job;

/* With panels, each item prepares whole groups of 16 tokens and then their panel. */
static void prep_task(void *arg, int ith, int nth) {
    const mm_job *j = arg;
    const int64_t g = j->tile16 ? 16 : 1, n_grp = (j->n_tok + g - 1) / g;
    int64_t per = (n_grp + nth - 1) / nth * g, t0 = per * ith, t1 = t0 + per;
    if (t1 > j->n_tok) t1 = j->n_tok;
    hr_act_prep_fn prep = j->k->act_prep[j->W->type];
    const tile_src *s = &j->ts;
    for (int64_t t = t0; t < t1; t++) {
        prep(j->X + t * j->W->n_in, (char *)s->xq + t * s->xs, j->W->n_in);
        if (j->xprep) j->xprep(s->xq + t * s->xs, (char *)s->xt + t * s->xts, j->W->n_in);
    }
    for (int64_t t = t0; j->tile16 && t < t1; t += 16)
        j->t16prep(s->xq + t * s->xs, s->xs, (int)(t1 - t < 16 ? t1 - t : 16), j->panels + t / 16 * j->pb, j->W->n_in);
}

#define ROW_ALIGN 4 /* span heights: a multiple of the decode kernel's (rows4) and of HR_TILE_R */

/* One activation row: rows [r0, r1), 4 and 2 side by side where the table has them; rows4
 * reads x4 (xq, or the row re-laid for rows4_x), the others xq. */
static void rows_dot(hr_tile_fn rows16, hr_tile_fn rows4, hr_tile_fn rows2, hr_vec_dot_fn dot, int64_t n, const char *w,
                     size_t rb, int64_t r0, int64_t r1, const void *xq, const void *x4, float *Y) {
    int64_t r = r0;
    for (; rows16 && r + 16 <= r1; r += 16) rows16(n, w + r * rb, rb, xq, 0, &Y[r], 0);
    for (; rows4 && r + 4 <= r1; r += 4) rows4(n, w + r * rb, rb, x4, 0, &Y[r], 0);
    for (; rows2 && r + 2 <= r1; r += 2) rows2(n, w + r * rb, rb, xq, 0, &Y[r], 0);
    for (; r < r1; r++) dot(n, &Y[r], w + r * rb, xq);
}

/* Y[t*ys + r] for rows [r0, r1) and activation rows [tb, te): 2-row tiles, vec_dot at the edges. */
static void tile_pairs(const tile_src *s, int64_t n, const char *w, size_t rb, int64_t r0, int64_t r1, int64_t tb,
                       int64_t te, float *Y, size_t ys) {
    int64_t r = r0;
    for (; s->tile && r + HR_TILE_R <= r1; r += HR_TILE_R) {
        int64_t t = tb;
        for (; s->tile_x && t + HR_TILE_C <= te; t += HR_TILE_C)
            s->tile_x(n, w + r * rb, rb, s->xt + t * s->xts, s->xts, Y + t * ys + r, ys);
        for (; t + HR_TILE_C <= te; t += HR_TILE_C) s->tile(n, w + r * rb, rb, s->xq + t * s->xs, s->xs, Y + t * ys + r, ys);
        for (; t < te; t++)
            for (int64_t i = 0; i < HR_TILE_R; i++) s->dot(n, &Y[t * ys + r + i], w + (r + i) * rb, s->xq + t * s->xs);
    }
    for (; r < r1; r++)
        for (int64_t t = tb; t < te; t++) s->dot(n, &Y[t * ys + r], w + r * rb, s->xq + t * s->xs);
}

/* The same, wide tiles first where the type has them; their token tail goes in pairs. */
static void tile_rows(const tile_src *s, int64_t n, const char *w, size_t rb, int64_t r0, int64_t r1, int64_t tb,
                      int64_t te, float *Y, size_t ys) {
    int64_t r = r0;
    for (; s->tile_xw && r + s->xw_rows <= r1; r += s->xw_rows) {
        int64_t t = tb;
        for (; t + s->xw_cols <= te; t += s->xw_cols)
            s->tile_xw(n, w + r * rb, rb, s->xt + t * s->xts, s->xts, Y + t * ys + r, ys);
        tile_pairs(s, n, w, rb, r, r + s->xw_rows, t, te, Y, ys);
    }
    tile_pairs(s, n, w, rb, r, r1, tb, te, Y, ys);
}

size_t hr_rows_dot_xbytes(const hr_kernels *k, uint32_t type, int64_t n) {
    const hr_kernels_ext *x = hr_kernels_ext_of(k);
    return type < HR_TYPE_MAX && x->tile_x[type] && x->tile[type] ? x->tile_xbytes[type](n) : 0;
}

void hr_rows_dot(const hr_kernels *k, uint32_t type, int64_t n, const void *w, size_t ws, int64_t n_rows,
                 const void *xq, size_t xs, int32_t n_x, float *y, size_t ys, void *xt) {
    const hr_kernels_ext *x = hr_kernels_ext_of(k);
    if (n_x == 1) {
        rows_dot(x->rows16[type], x->rows4[type], x->rows2[type], k->vec_dot[type], n, w, ws, 0, n_rows, xq, xq, y);
        return;
    }
    tile_src s = {.tile = x->tile[type], .dot = k->vec_dot[type], .xq = xq, .xs = xs};
    const size_t xtb = hr_rows_dot_xbytes(k, type, n);
    if (xt && n_x >= HR_TILE_C && xtb && xtb <= xs) {
        for (int32_t c = 0; c < n_x; c++) x->tile_xprep[type]((const char *)xq + c * xs, (char *)xt + c * xs, n);
        use_relaid(&s, x, type);
        s.xt = xt, s.xts = xs;
    }
    tile_rows(&s, n, w, ws, 0, n_rows, 0, n_x, y, ys);
}

/* Rows [r0, r1) for tokens [tb, te) (te - tb <= TOK_BLOCK, tb a multiple of 16) over the
 * panels: 16 rows at a time, the plain tiles for the rows past the last 16. */
static void mm_panels(const mm_job *j, int64_t n, const char *w, size_t rb, int64_t r0, int64_t r1, int64_t tb,
                      int64_t te, float *Y, size_t ys) {
    int64_t r = r0;
    for (; r + 16 <= r1; r += 16) j->tile16(n, w + r * rb, rb, j->panels + tb / 16 * j->pb, j->pb, Y + tb * ys + r, ys, (int)(te - tb));
    tile_pairs(&j->ts, n, w, rb, r, r1, tb, te, Y, ys);
}

/* Rows [r0, r1) of Y = X W^T for every token. */
static void mm_rows(const mm_job *j, const hr_mat *W, float *Y, int64_t r0, int64_t r1) {
    const int64_t n = W->n_in;
    const size_t rb = hr_mat_stride(W); /* from a row to the next */
    const char *w = W->data;
    if (j->tile16) {
        for (int64_t tb = 0; tb < j->n_tok; tb += TOK_BLOCK)
            mm_panels(j, n, w, rb, r0, r1, tb, tb + TOK_BLOCK < j->n_tok ? tb + TOK_BLOCK : j->n_tok, Y, (size_t)W->n_out);
        return;
    }
    if (j->n_tok == 1) {
        rows_dot(j->rows16, j->rows4, j->rows2, j->ts.dot, n, w, rb, r0, r1, j->ts.xq, j->xprep ? j->ts.xt : j->ts.xq, Y);
        return;
    }
    for (int64_t tb = 0; tb < j->n_tok; tb += TOK_BLOCK)
        tile_rows(&j->ts, n, w, rb, r0, r1, tb, tb + TOK_BLOCK < j->n_tok ? tb + TOK_BLOCK : j->n_tok, Y, (size_t)W->n_out);
}

static void mm_span(const mm_job *j, int64_t r0, int64_t r1) {
    mm_rows(j, j->W, j->Y, r0, r1);
    if (j->W1) mm_rows(j, j->W1, j->Y1, r0, r1);
    if (j->ep && r0 < r1) j->ep->fn(j->ep->arg, r0, r1);
}

static void mm_range(void *arg, int64_t r0, int64_t r1, int slot) {
    (void)slot;
    mm_span(arg, r0, r1);
}

/* Checks one product (W1: a pair's second matrix, or NULL) and picks its kernels into *j;
 * *need: the scratch bytes its prepared activations take (hr_matmul's paths, in order). */
static int mm_setup(const hr_cpu *c, mm_job *j, const hr_mat *W, const hr_mat *W1, const float *X, int64_t n_tok, float *Y,
                    float *Y1, const hr_mm_epi *ep, size_t *need, hr_err *e) {
    if (!c || !c->pool || !W || !W->data || !X || !Y) return hr_errf(e, "matmul: missing argument");
    if (W1 && (!hr_matmul_pair_fits(W, W1) || !Y1)) return hr_errf(e, "matmul: the pair's matrices differ in type or shape");
    if (W->type >= HR_TYPE_MAX || !c->k->vec_dot[W->type] || !c->k->act_prep[W->type])
        return hr_errf(e, "matmul: weight type %u has no CPU kernel", W->type);
    if (n_tok < 1 || W->n_in < 1 || W->n_out < 1) return hr_errf(e, "matmul: empty shape");
    if (hr_row_bytes(W->type, (uint64_t)W->n_in) != W->row_bytes || W->row_bytes == 0)
        return hr_errf(e, "matmul: row size %zu does not fit %lld %s elements", W->row_bytes,
                       (long long)W->n_in, hr_type_name(W->type));
    if (W->stride && W->stride < W->row_bytes)
        return hr_errf(e, "matmul: row stride %zu is under the row size %zu", W->stride, W->row_bytes);
    const hr_kernels_ext *x = hr_kernels_ext_of(c->k);
    *j = (mm_job){.k = c->k, .rows2 = x->rows2[W->type], .rows4 = x->rows4[W->type],
                  .ts = {.tile = x->tile[W->type], .dot = c->k->vec_dot[W->type]}, .W = W, .X = X,
                  .n_tok = n_tok, .Y = Y, .W1 = W1, .Y1 = Y1, .ep = ep, .align = ROW_ALIGN};
    tile_src *s = &j->ts;
    *need = 0;
    if (W->type == HR_F32) {
        s->xq = (const char *)X;
        s->xs = (size_t)W->n_in * sizeof(float);
        return 0;
    }
    s->xs = (hr_act_bytes(W->type, W->n_in) + 63) & ~(size_t)63;
    size_t panel_bytes = 0;
    if (n_tok > 1 && x->tile16[W->type] && n_tok >= x->tile16_min[W->type]) { /* panels of 16 tokens */
        j->tile16 = x->tile16[W->type], j->t16prep = x->tile16_prep[W->type], j->align = 16;
        j->pb = (x->tile16_bytes[W->type](W->n_in) + 63) & ~(size_t)63;
        if ((uint64_t)n_tok > SIZE_MAX / 4 / j->pb) return hr_errf(e, "matmul: batch too large");
        panel_bytes = (size_t)(n_tok + 15) / 16 * j->pb;
    } else if (n_tok >= HR_TILE_C && x->tile_x[W->type] && s->tile) { /* rows re-laid once here */
        use_relaid(s, x, W->type);
        j->xprep = x->tile_xprep[W->type];
        s->xts = (x->tile_xbytes[W->type](W->n_in) + 63) & ~(size_t)63;
    } else if (n_tok == 1 && x->rows16[W->type]) { /* decode 16 rows at a time */
        j->rows16 = x->rows16[W->type], j->align = 16;
    } else if (n_tok == 1 && x->rows4_x[W->type] && x->tile_xprep[W->type]) { /* decode over the re-laid row */
        j->rows4 = x->rows4_x[W->type];
        j->xprep = x->tile_xprep[W->type];
        s->xts = (x->tile_xbytes[W->type](W->n_in) + 63) & ~(size_t)63;
    }
    if ((uint64_t)n_tok > SIZE_MAX / 2 / (s->xs + s->xts)) return hr_errf(e, "matmul: batch too large");
    *need = (s->xs + s->xts) * (size_t)n_tok + panel_bytes; /* a multiple of 64: xs, xts and pb are */
    return 0;
}

/* The job's prepared rows in base (mm_setup's need bytes, 64-byte aligned). */
static void mm_bind(mm_job *j, char *base) {
    if (j->W->type == HR_F32) return;
    tile_src *s = &j->ts;
    s->xq = base;
    s->xt = base + s->xs * (size_t)j->n_tok;
    j->panels = base + (s->xs + s->xts) * (size_t)j->n_tok;
}

/* Bytes a product (W1: a pair's second matrix, or NULL) moves, for the profile: weights,
 * outputs and activations. */
static uint64_t mm_bytes(const hr_mat *W, const hr_mat *W1, int64_t n_tok) {
    const uint64_t mats = W1 ? 2 : 1;
    return mats * ((uint64_t)W->n_out * W->row_bytes + (uint64_t)n_tok * (uint64_t)W->n_out * 4) +
           (uint64_t)n_tok * (uint64_t)W->n_in * 4;
}

/* Rows per step of a range run: enough bytes that a claim costs nothing beside them, few
 * enough that the last step leaves the other threads idle only briefly; a multiple of the
 * job's alignment so every row meets the same kernel whatever the split. */
static int64_t mm_step(const mm_job *j) {
    const int64_t rb = (int64_t)(j->W1 ? 2 : 1) * (int64_t)j->W->row_bytes;
    const int64_t want = STEP_BYTES / (rb > 0 ? rb : 1);
    return want <= j->align ? j->align : (want + j->align - 1) / j->align * j->align;
}

static int matmul_run(hr_cpu *c, const hr_mat *W, const hr_mat *W1, const float *X, int64_t n_tok, float *Y, float *Y1,
                      const hr_mm_epi *ep, hr_err *e) {
    mm_job j;
    size_t need;
    if (mm_setup(c, &j, W, W1, X, n_tok, Y, Y1, ep, &need, e)) return -1;
    if (W->type != HR_F32) {
        if (hr_cpu_reserve(c, need, e) < 0) return -1;
        mm_bind(&j, c->scratch);
        if (n_tok * W->n_in >= PAR_PREP_ELEMS && n_tok > 1) hr_pool_run(c->pool, prep_task, &j);
        else prep_task(&j, 0, 1);
    }
    hr_pool_run_ranges(c->pool, mm_range, &j, W->n_out, mm_step(&j));
    return 0;
}

/* hr_matmul_group's run: item i's steps are the range run's indices [first[i], first[i + 1]). */
typedef struct {
    mm_job *jobs;
    int *first;
    int n;
} mm_group;

static void grp_prep_task(void *arg, int ith, int nth) {
    (void)nth;
    const mm_group *g = arg;
    if (g->jobs[ith].W->type != HR_F32) prep_task(&g->jobs[ith], 0, 1);
}

/* Item i's steps [s0, s1) as one span of its rows. */
static void grp_item(void *arg, int i, int64_t s0, int64_t s1) {
    const mm_job *j = &((const mm_group *)arg)->jobs[i];
    const int64_t r1 = s1 * j->step;
    mm_span(j, s0 * j->step, r1 < j->W->n_out ? r1 : j->W->n_out);
}

/* Each item's steps: a batch's hold fewer rows the more tokens it has, so that steps are
 * about equal work across the items and equal shares of steps equal shares of work. */
static int grp_steps(mm_group *g) {
    g->first[0] = 0;
    for (int i = 0; i < g->n; i++) {
        mm_job *j = &g->jobs[i];
        const int64_t rows = mm_step(j) / j->n_tok;
        j->step = rows <= j->align ? j->align : rows / j->align * j->align;
        const int64_t k = (j->W->n_out + j->step - 1) / j->step;
        if (k > INT_MAX - g->first[i]) return -1;
        g->first[i + 1] = g->first[i] + (int)k;
    }
    return 0;
}

/* Groups up to this size (a decoded token's experts) keep their jobs on the stack: decode allocates nothing. */
#define GRP_STACK 16

static int group_run(hr_cpu *c, const hr_mm_item *items, int n, uint64_t *bytes, hr_err *e) {
    mm_job jobs_s[GRP_STACK];
    int first_s[GRP_STACK + 1];
    size_t need_s[GRP_STACK], total = 0;
    const bool heap = n > GRP_STACK;
    mm_group g = {.jobs = heap ? malloc(sizeof(mm_job) * (size_t)n) : jobs_s,
                  .first = heap ? malloc(sizeof(int) * (size_t)(n + 1)) : first_s, .n = n};
    size_t *need = heap ? malloc(sizeof(size_t) * (size_t)n) : need_s;
    int r = -1;
    if (!g.jobs || !g.first || !need) {
        hr_errf(e, "out of memory for a group of %d products", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const hr_mm_item *it = &items[i];
        if (mm_setup(c, &g.jobs[i], it->W, it->W1, it->X, it->n_tok, it->Y, it->Y1, it->ep, &need[i], e)) goto done;
        total += need[i];
        *bytes += mm_bytes(it->W, it->W1, it->n_tok);
    }
    if (hr_cpu_reserve(c, total, e) < 0) goto done;
    size_t off = 0;
    for (int i = 0; i < n; i++) mm_bind(&g.jobs[i], (char *)c->scratch + off), off += need[i];
    const int nth = hr_pool_threads(c->pool);
    if (nth > 1) hr_pool_run_chunks(c->pool, grp_prep_task, &g, n);
    else
        for (int i = 0; i < n; i++) grp_prep_task(&g, i, n);
    if (grp_steps(&g) < 0) {
        hr_errf(e, "matmul: a group of %d products too large to split", n);
        goto done;
    }
    hr_pool_run_group(c->pool, g.first, n, grp_item, &g);
    r = 0;
done:
    if (heap) free(g.jobs), free(g.first), free(need);
    return r;
}

int hr_matmul_group(hr_cpu *c, const hr_mm_item *items, int n_items, hr_err *e) {
    if (n_items < 0 || (n_items && !items)) return hr_errf(e, "matmul: missing argument");
    if (n_items > 65535) return hr_errf(e, "matmul: a group of %d products (at most 65535)", n_items);
    if (!n_items) return 0;
    uint64_t bytes = 0;
    if (!c || !c->prof || !items[0].W) return group_run(c, items, n_items, &bytes, e);
    bool decode = true; /* all items one token: timed as matrix-vector products */
    for (int i = 0; i < n_items; i++) decode &= items[i].n_tok == 1;
    const hr_prof_mark m = hr_prof_begin(c->prof);
    const int r = group_run(c, items, n_items, &bytes, e);
    hr_prof_end(c->prof, m, decode ? HR_PROF_MATVEC : HR_PROF_GEMM, items[0].W->type, bytes);
    return r;
}

/* One product (W1 NULL) or a pair, timed as a product (epilogue included) when profiling. */
static int matmul_prof(hr_cpu *c, const hr_mat *W, const hr_mat *W1, const float *X, int64_t n_tok, float *Y, float *Y1,
                       const hr_mm_epi *ep, hr_err *e) {
    if (!c || !c->prof || !W) return matmul_run(c, W, W1, X, n_tok, Y, Y1, ep, e);
    const hr_prof_mark m = hr_prof_begin(c->prof);
    const int r = matmul_run(c, W, W1, X, n_tok, Y, Y1, ep, e);
    hr_prof_end(c->prof, m, n_tok == 1 ? HR_PROF_MATVEC : HR_PROF_GEMM, W->type, mm_bytes(W, W1, n_tok));
    return r;
}

int hr_matmul(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, float *Y, hr_err *e) {
    return matmul_prof(c, W, NULL, X, n_tok, Y, NULL, NULL, e);
}

int hr_matmul_ep(hr_cpu *c, const hr_mat *W, const float *X, int64_t n_tok, float *Y, const hr_mm_epi *ep, hr_err *e) {
    return matmul_prof(c, W, NULL, X, n_tok, Y, NULL, ep, e);
}

bool hr_matmul_pair_fits(const hr_mat *W0, const hr_mat *W1) {
    return W0 && W1 && W0->data && W1->data && W0->type == W1->type && W0->n_in == W1->n_in && W0->n_out == W1->n_out &&
           W0->row_bytes == W1->row_bytes && hr_mat_stride(W0) == hr_mat_stride(W1);
}

int hr_matmul_pair(hr_cpu *c, const hr_mat *W0, const hr_mat *W1, const float *X, int64_t n_tok, float *Y0, float *Y1,
                   const hr_mm_epi *ep, hr_err *e) {
    if (!W1) return hr_errf(e, "matmul: missing argument");
    return matmul_prof(c, W0, W1, X, n_tok, Y0, Y1, ep, e);
}
