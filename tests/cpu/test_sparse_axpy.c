/* hr_sparse_axpy against a double-precision sum of rows dequantized by hr_dequant_row,
 * for every weight type and axpy table (scalar twin and SIMD), awkward row lengths,
 * index lists of 0, 1, 7, all and many (repeats, unsorted) rows, 1..17 tokens and
 * 1..3 threads; results repeat bit for bit for a given thread count; a NaN row with
 * a zero coefficient leaves the output clean; bad input fails. Weights of the block types are
 * random bytes with finite moderate scales (tests/randw.h), so every quant, packed scale
 * and high-bit pattern is exercised.
 *
 * Tolerance: each output is a sum of m products a*w (w exact in F32), each rounded
 * once, added one at a time in F32 (within a chunk, then chunk partials in order):
 * the classic recursive-summation bound |err| <= (m + 1) u sum|a w|, u = 2^-24, with
 * m the terms plus chunks. Fused multiply-adds only tighten it. We allow (m + 2) u. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sparse.h"
#include "randw.h"
#include "testutil.h"

#define MAX_TOK 17
#define MAX_IDX 160

typedef struct {
    const int32_t *idx;
    int64_t n;
    const char *what;
} idx_list;

typedef struct {
    uint32_t t;
    int64_t n_in, n_out;
} shape;

static int64_t make_lists(int64_t n_out, hr_rng *r, int32_t *buf, idx_list *L) {
    int64_t k = 0, used = 0;
    L[k++] = (idx_list){buf, 0, "none"};
    buf[used] = (int32_t)(hr_rng_next(r) % (uint64_t)n_out);
    L[k++] = (idx_list){buf + used, 1, "one"};
    used += 1;
    for (int64_t i = 0; i < 7; i++) buf[used + i] = (int32_t)(hr_rng_next(r) % (uint64_t)n_out);
    L[k++] = (idx_list){buf + used, 7, "seven"};
    used += 7;
    for (int64_t i = 0; i < n_out; i++) buf[used + i] = (int32_t)i;
    L[k++] = (idx_list){buf + used, n_out, "all"};
    used += n_out;
    int64_t m = MAX_IDX - used;
    for (int64_t i = 0; i < m; i++) buf[used + i] = (int32_t)(hr_rng_next(r) % (uint64_t)n_out);
    L[k++] = (idx_list){buf + used, m, "many (repeats, unsorted)"};
    return k;
}

/* Coefficients: normal, about a third exactly zero (the skipped terms). */
static void fill_coef(float *A, int64_t n, hr_rng *r) {
    for (int64_t i = 0; i < n; i++) A[i] = hr_rng_uniform(r) < 0.33f ? 0.0f : hr_rng_normal(r);
}

static int within(const float *Y, const double *ref, const double *mag, int64_t len, double terms) {
    int bad = 0;
    for (int64_t k = 0; k < len; k++) {
        double tl = (terms + 2) * 0x1p-24 * mag[k] + 1e-30;
        if (!(fabs(Y[k] - ref[k]) <= tl)) {
            if (bad < 3) fprintf(stderr, "  k=%lld: %.9g vs %.9g (tol %.3g)\n", (long long)k, Y[k], ref[k], tl);
            bad++;
        }
    }
    return bad;
}

static void run_case(shape s, hr_rng *r) {
    const hr_axpy_kernels *tabs[] = {hr_axpy_scalar(), hr_axpy_avx2(), hr_axpy_avx512()};
    const int64_t toks[] = {1, 2, 5, 17};
    const size_t rb = hr_row_bytes(s.t, (uint64_t)s.n_in);
    const int64_t len = MAX_TOK * s.n_in;
    char *w = malloc(rb * s.n_out);
    float *wf = malloc(s.n_out * s.n_in * sizeof *wf), *A = malloc(MAX_TOK * MAX_IDX * sizeof *A);
    float *Y = malloc(len * sizeof *Y), *Y2 = malloc(len * sizeof *Y2), *Y1 = malloc(len * sizeof *Y1);
    float *Ysc = malloc(len * sizeof *Ysc);
    double *ref = malloc(len * sizeof *ref), *mag = malloc(len * sizeof *mag);
    int32_t buf[MAX_IDX];
    idx_list L[8];
    randw_mat(s.t, w, rb, s.n_in, s.n_out, r); /* rows of different size */
    for (int64_t o = 0; o < s.n_out; o++) hr_dequant_row(s.t, w + o * rb, wf + o * s.n_in, s.n_in);
    int64_t nl = make_lists(s.n_out, r, buf, L);
    hr_mat Wt = {.type = s.t, .n_in = s.n_in, .n_out = s.n_out, .row_bytes = rb, .data = w};
    hr_cpu c[3];
    hr_err e = {{0}};
    for (int i = 0; i < 3; i++) CHECK(hr_cpu_init(&c[i], i + 1, &e) == 0);
    for (int64_t l = 0; l < nl; l++) {
        const idx_list *li = &L[l];
        for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++) {
            const int64_t nt = toks[ti], ln = nt * s.n_in;
            fill_coef(A, nt * li->n, r);
            for (int64_t t = 0; t < nt; t++)
                for (int64_t k = 0; k < s.n_in; k++) {
                    double a = 0, m = 0;
                    for (int64_t i = 0; i < li->n; i++) {
                        double p = (double)A[t * li->n + i] * wf[li->idx[i] * s.n_in + k];
                        a += p;
                        m += fabs(p);
                    }
                    ref[t * s.n_in + k] = a;
                    mag[t * s.n_in + k] = m;
                }
            const double terms = (double)li->n + 12; /* + the most chunks (3 threads x 4) */
            for (size_t tb = 0; tb < sizeof tabs / sizeof tabs[0]; tb++) {
                if (!tabs[tb]) continue;
                for (int th = 0; th < 3; th++) {
                    hr_sparse_ws ws;
                    hr_sparse_ws_init(&ws);
                    ws.ax = tabs[tb];
                    for (int64_t k = 0; k < ln; k++) Y[k] = NAN; /* overwritten, not added to */
                    CHECKF(hr_sparse_axpy_ws(&c[th], &ws, &Wt, A, nt, li->idx, li->n, Y, &e) == 0, "%s", e.msg);
                    int bad = within(Y, ref, mag, ln, terms);
                    CHECKF(bad == 0, "%s %s n_in=%lld %s tok=%lld thr=%d: %d outputs off", tabs[tb]->name,
                           hr_type_name(s.t), (long long)s.n_in, li->what, (long long)nt, th + 1, bad);
                    CHECK(hr_sparse_axpy_ws(&c[th], &ws, &Wt, A, nt, li->idx, li->n, Y2, &e) == 0);
                    CHECKF(memcmp(Y, Y2, ln * sizeof *Y) == 0, "%s %s thr=%d: repeat differs", tabs[tb]->name,
                           hr_type_name(s.t), th + 1);
                    if (th == 0 && tb == 0) memcpy(Ysc, Y, ln * sizeof *Y);
                    if (th == 0) memcpy(Y1, Y, ln * sizeof *Y);
                    /* twins and thread counts agree within the bound of each (twice it) */
                    int far_sc = 0, far_t1 = 0;
                    for (int64_t k = 0; k < ln; k++) {
                        double tl = 2 * (terms + 2) * 0x1p-24 * mag[k] + 1e-30;
                        far_sc += !(fabs((double)Y[k] - Ysc[k]) <= tl);
                        far_t1 += !(fabs((double)Y[k] - Y1[k]) <= tl);
                    }
                    CHECKF(far_sc == 0, "%s %s thr=%d: %d outputs far from the scalar twin", tabs[tb]->name,
                           hr_type_name(s.t), th + 1, far_sc);
                    CHECKF(far_t1 == 0, "%s %s thr=%d: %d outputs far from 1 thread", tabs[tb]->name,
                           hr_type_name(s.t), th + 1, far_t1);
                    if (tabs[tb] == hr_axpy_best()) { /* the temporary-workspace entry point: the same */
                        CHECK(hr_sparse_axpy(&c[th], &Wt, A, nt, li->idx, li->n, Y2, &e) == 0);
                        CHECK(memcmp(Y, Y2, ln * sizeof *Y) == 0);
                    }
                    hr_sparse_ws_free(&ws);
                }
            }
        }
    }
    for (int i = 0; i < 3; i++) hr_cpu_free(&c[i]);
    free(w); free(wf); free(A); free(Y); free(Y2); free(Y1); free(Ysc); free(ref); free(mag);
}

/* A row of NaN weights with coefficient 0 must not reach the output; with a non-zero
 * coefficient it must (the term is not silently dropped). */
static void nan_row(uint32_t t, hr_rng *r) {
    const int64_t n = hr_type_block_elems(t) > 64 ? (int64_t)hr_type_block_elems(t) : 64, rows = 9;
    const size_t rb = hr_row_bytes(t, n);
    char *w = calloc(rows, rb);
    randw_mat(t, w, rb, n, rows, r);
    randw_poison(t, w + 4 * rb, n); /* every block's scale NaN (MXFP4: infinite values) */
    hr_mat Wt = {.type = t, .n_in = n, .n_out = rows, .row_bytes = rb, .data = w};
    /* the NaN row in the middle of a group of four non-zero rows */
    int32_t idx[] = {0, 1, 2, 4, 3, 5, 6, 7, 8};
    float A[2 * 9];
    for (int i = 0; i < 9; i++) A[i] = A[9 + i] = 0.5f + (float)i;
    A[3] = 0.0f;   /* token 0: NaN row skipped */
    A[9 + 3] = -0.0f; /* token 1: also skipped (negative zero) */
    float Y[2 * 256];
    const hr_axpy_kernels *tabs[] = {hr_axpy_scalar(), hr_axpy_avx2(), hr_axpy_avx512()};
    for (size_t k = 0; k < 3; k++) {
        if (!tabs[k]) continue;
        for (int nth = 1; nth <= 2; nth++) {
            hr_cpu c;
            hr_err e = {{0}};
            hr_sparse_ws ws;
            hr_sparse_ws_init(&ws);
            ws.ax = tabs[k];
            CHECK(hr_cpu_init(&c, nth, &e) == 0);
            for (int64_t nt = 1; nt <= 2; nt++) {
                CHECK(hr_sparse_axpy_ws(&c, &ws, &Wt, A, nt, idx, 9, Y, &e) == 0);
                int nans = 0;
                for (int64_t i = 0; i < nt * n; i++) nans += !isfinite(Y[i]);
                CHECKF(nans == 0, "%s %s tok=%lld: zero coefficient let a NaN row through", tabs[k]->name,
                       hr_type_name(t), (long long)nt);
            }
            /* batch where only token 1 uses the NaN row */
            float A2[2 * 9];
            memcpy(A2, A, sizeof A2);
            A2[9 + 3] = 1.0f;
            CHECK(hr_sparse_axpy_ws(&c, &ws, &Wt, A2, 2, idx, 9, Y, &e) == 0);
            int nan0 = 0, nan1 = 0;
            for (int64_t i = 0; i < n; i++) nan0 += !isfinite(Y[i]), nan1 += !isfinite(Y[n + i]);
            CHECKF(nan0 == 0 && nan1 == n, "%s %s: token 0 has %d NaN (want 0), token 1 %d (want %lld)",
                   tabs[k]->name, hr_type_name(t), nan0, nan1, (long long)n);
            hr_sparse_ws_free(&ws);
            hr_cpu_free(&c);
        }
    }
    free(w);
}

/* One row with coefficient 1 onto zeros is the row itself: every table's decoders give
 * hr_dequant_row's values exactly (0 + 1 * w == w; compared as values, so -0 == +0). */
static void exact_rows(uint32_t t, hr_rng *r) {
    const int64_t n = 8 * (int64_t)hr_type_block_elems(t), rows = 5;
    const size_t rb = hr_row_bytes(t, n);
    char *w = malloc(rows * rb);
    float *ref = malloc(n * sizeof *ref), *Y = malloc(n * sizeof *Y);
    randw_mat(t, w, rb, n, rows, r);
    hr_mat Wt = {.type = t, .n_in = n, .n_out = rows, .row_bytes = rb, .data = w};
    const hr_axpy_kernels *tabs[] = {hr_axpy_scalar(), hr_axpy_avx2(), hr_axpy_avx512()};
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 1, &e) == 0);
    for (size_t k = 0; k < 3; k++) {
        if (!tabs[k]) continue;
        hr_sparse_ws ws;
        hr_sparse_ws_init(&ws);
        ws.ax = tabs[k];
        for (int32_t o = 0; o < rows; o++) {
            const float one = 1.0f;
            hr_dequant_row(t, w + o * rb, ref, n);
            CHECK(hr_sparse_axpy_ws(&c, &ws, &Wt, &one, 1, &o, 1, Y, &e) == 0);
            int64_t bad = 0;
            for (int64_t i = 0; i < n; i++) bad += !(Y[i] == ref[i]);
            CHECKF(bad == 0, "%s %s row %d: %lld weights differ from hr_dequant_row", tabs[k]->name, hr_type_name(t),
                   (int)o, (long long)bad);
        }
        hr_sparse_ws_free(&ws);
    }
    hr_cpu_free(&c);
    free(w), free(ref), free(Y);
}

/* hr_sparse_reserve sizes the workspace for the largest case, so later calls keep it. */
static void reserve(void) {
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 3, &e) == 0);
    hr_sparse_ws ws;
    hr_sparse_ws_init(&ws);
    CHECK(hr_sparse_reserve(&ws, &c, 4, 64, &e) == 0);
    float *p = ws.part;
    const int64_t rows = 300;
    float *w = calloc(rows * 64, sizeof *w), A[4 * 300], Y[4 * 64];
    int32_t idx[300];
    for (int i = 0; i < 300; i++) idx[i] = i, A[i] = A[300 + i] = A[600 + i] = A[900 + i] = 1.0f;
    for (int64_t i = 0; i < rows * 64; i++) w[i] = (float)(i % 64);
    hr_mat Wt = {.type = HR_F32, .n_in = 64, .n_out = rows, .row_bytes = 64 * 4, .data = w};
    for (int64_t nt = 1; nt <= 4; nt++) {
        CHECK(hr_sparse_axpy_ws(&c, &ws, &Wt, A, nt, idx, 300, Y, &e) == 0);
        CHECK(Y[(nt - 1) * 64 + 5] == 5.0f * 300);
    }
    CHECKF(ws.part == p, "reserved workspace was reallocated");
    hr_sparse_ws_free(&ws);
    hr_cpu_free(&c);
    free(w);
}

static void bad_input(void) {
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 2, &e) == 0);
    float w[4 * 32] = {0}, a[2] = {1, 1}, y[32];
    hr_mat W = {.type = HR_F32, .n_in = 32, .n_out = 4, .row_bytes = 128, .data = w};
    int32_t ok[] = {0, 3}, neg[] = {0, -1}, big[] = {4, 0};
    CHECK(hr_sparse_axpy(&c, &W, a, 1, ok, 2, y, &e) == 0);
    e.msg[0] = 0;
    CHECK(hr_sparse_axpy(&c, &W, a, 1, neg, 2, y, &e) < 0 && e.msg[0]);
    CHECK(hr_sparse_axpy(&c, &W, a, 1, big, 2, y, &e) < 0);
    CHECK(hr_sparse_axpy(&c, &W, a, 0, ok, 2, y, &e) < 0);
    CHECK(hr_sparse_axpy(&c, &W, NULL, 1, ok, 2, y, &e) < 0);
    CHECK(hr_sparse_axpy(&c, NULL, a, 1, ok, 2, y, &e) < 0);
    hr_mat bad = W;
    bad.row_bytes = 100;
    CHECK(hr_sparse_axpy(&c, &bad, a, 1, ok, 2, y, &e) < 0);
    bad = W;
    bad.type = HR_I32;
    CHECK(hr_sparse_axpy(&c, &bad, a, 1, ok, 2, y, &e) < 0);
    bad.type = 99;
    CHECK(hr_sparse_axpy(&c, &bad, a, 1, ok, 2, y, &e) < 0);
    hr_cpu_free(&c);
}

int main(void) {
    hr_rng r = {23};
    const shape shapes[] = {
        {HR_F32, 33, 41}, {HR_F32, 96, 20}, {HR_F16, 32, 41}, {HR_F16, 47, 23}, {HR_F16, 4128, 40},
        {HR_BF16, 96, 41}, {HR_BF16, 50, 17}, {HR_Q8_0, 32, 41}, {HR_Q8_0, 96, 23}, {HR_Q8_0, 4128, 40},
        {HR_Q4_0, 32, 41}, {HR_Q4_0, 96, 23}, {HR_Q4_0, 4128, 40}, {HR_F32, 4128, 12}, {HR_BF16, 4128, 12},
        /* the newer types: one block, an odd block count, a long row (4128 = 129 x 32) */
        {HR_Q4_1, 32, 41}, {HR_Q4_1, 96, 23}, {HR_Q4_1, 4128, 17}, {HR_Q5_0, 32, 41}, {HR_Q5_0, 96, 23},
        {HR_Q5_0, 4128, 17}, {HR_Q5_1, 32, 41}, {HR_Q5_1, 160, 23}, {HR_IQ4_NL, 32, 41}, {HR_IQ4_NL, 96, 23},
        {HR_MXFP4, 32, 41}, {HR_MXFP4, 96, 23}, {HR_MXFP4, 4128, 17},
        /* 256-element types: one super-block, three, a long row (4352 = 17 x 256) */
        {HR_Q2_K, 256, 41}, {HR_Q2_K, 768, 23}, {HR_Q3_K, 256, 41}, {HR_Q3_K, 768, 23}, {HR_Q4_K, 256, 41},
        {HR_Q4_K, 768, 23}, {HR_Q4_K, 4352, 17}, {HR_Q5_K, 256, 41}, {HR_Q5_K, 768, 23}, {HR_Q5_K, 4352, 17},
        {HR_Q6_K, 256, 41}, {HR_Q6_K, 768, 23}, {HR_Q6_K, 4352, 17}, {HR_IQ4_XS, 256, 41}, {HR_IQ4_XS, 768, 23},
        {HR_IQ4_XS, 4352, 17},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) run_case(shapes[i], &r);
    const uint32_t types[] = {HR_F32,   HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1,
                              HR_IQ4_NL, HR_MXFP4, HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) nan_row(types[i], &r);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) exact_rows(types[i], &r);
    /* every weight type has a kernel in every table */
    const hr_axpy_kernels *all[] = {hr_axpy_scalar(), hr_axpy_avx2(), hr_axpy_avx512()};
    for (uint32_t t = 0; t < HR_TYPE_MAX; t++)
        for (size_t k = 0; k < 3; k++)
            if (all[k] && hr_type_is_weight(t)) CHECKF(all[k]->axpy[t] != NULL, "%s: no %s kernel", all[k]->name, hr_type_name(t));
    reserve();
    bad_input();
    return TEST_END();
}
