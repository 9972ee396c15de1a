/* Prompt tiles over re-laid activations (tile_x, tile_xprep, tile_xbytes in kernels_impl.h)
 * of every table the CPU runs:
 *  - tile_x (and tile_xw, its wider form, where a table has it) on tile_xprep's rows
 *    bit-identical to the same table's vec_dot on act_prep's rows, for every (row, token) of the tile, on lengths that leave a ragged group of
 *    blocks (Q4_0: n/32 not a multiple of 8) and on the xprep buffer pre-filled with garbage
 *    (so any byte the tile reads but xprep did not write shows); Q8_0 weights include -128;
 *  - the same values within a rounding bound of the plain-C (scalar) table's vec_dot, the
 *    kernels' twin;
 *  - tile16 (16 rows over panels of 16 tokens) outside the AMX table: vec_dot's bits for every
 *    batch size to past 64 tokens, nothing written past the batch;
 *  - through hr_matmul: batch sizes around the tile width and past the 64-token block, 1-3
 *    threads, row counts that leave tile tails (4-row, 2-row, single): every output equal to vec_dot's, so a
 *    token's result does not depend on the batch or the thread count. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/matmul.h"
#include "kernel_rows.h"
#include "testutil.h"

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static const uint32_t k_types[] = {HR_F16, HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q5_0, HR_IQ4_NL, HR_MXFP4,
                                   HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};

/* lengths per block size: ragged groups of 8 blocks, one block, long rows; F16/BF16: tails
 * of 16 and of single elements */
static int64_t lens(uint32_t t, int i) {
    static const int64_t l32[] = {32, 96, 288, 544, 2080}, l256[] = {256, 768, 2816, 4096, 512};
    static const int64_t l1[] = {7, 48, 300, 2080, 4101};
    const int64_t b = hr_type_block_elems(t);
    return b == 32 ? l32[i] : b == 1 ? l1[i] : l256[i];
}
#define N_LENS 5

#define MAX_R 4 /* tile_xw's largest shape */
#define MAX_C 8

/* vec_dot and the scalar twin on act_prep rows; tile (tile_x, or tile_xw: R x C) on the
 * re-laid rows */
static void check_tile(const hr_kernels *k, uint32_t t, int64_t n, const char *w, const char *xq, const char *xt,
                       hr_tile_fn tile, int R, int C) {
    const size_t rb = hr_row_bytes(t, (uint64_t)n), xs = (hr_act_bytes(t, n) + 63) & ~(size_t)63;
    const size_t xts = (hr_kernels_ext_of(k)->tile_xbytes[t](n) + 63) & ~(size_t)63;
    float y[MAX_C][MAX_R + 1];
    for (int c = 0; c < MAX_C; c++)
        for (int i = 0; i <= MAX_R; i++) y[c][i] = -3.25f;
    tile(n, w, rb, xt, xts, &y[0][0], MAX_R + 1);
    /* the scalar twin reads its own prep (byte-identical preps are tested elsewhere) */
    for (int c = 0; c < C; c++)
        for (int i = 0; i < R; i++) {
            float s, s0;
            k->vec_dot[t](n, &s, w + i * rb, xq + c * xs);
            CHECKF(same(s, y[c][i]), "%s tile_x(%dx%d) %s n=%lld (%d,%d): %.9g vs vec_dot %.9g", k->name, R, C,
                   hr_type_name(t), (long long)n, i, c, y[c][i], s);
            hr_kernels_scalar()->vec_dot[t](n, &s0, w + i * rb, xq + c * xs);
            double mag, ref = kt_ref_dot(t, w + i * rb, xq + c * xs, n, &mag);
            (void)ref;
            CHECKF(fabs(y[c][i] - s0) <= 4e-6 * mag, "%s tile_x %s n=%lld: %.9g vs scalar %.9g (mag %g)", k->name,
                   hr_type_name(t), (long long)n, y[c][i], s0, mag);
        }
    for (int c = 0; c < MAX_C; c++) /* writes only its outputs */
        for (int i = 0; i <= MAX_R; i++)
            if (c >= C || i >= R) CHECK(y[c][i] == -3.25f);
}

static void check_direct(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    const hr_kernels_ext *e = hr_kernels_ext_of(k);
    const size_t rb = hr_row_bytes(t, (uint64_t)n), xs = (hr_act_bytes(t, n) + 63) & ~(size_t)63;
    const size_t xts = (e->tile_xbytes[t](n) + 63) & ~(size_t)63;
    char *w = malloc(rb * MAX_R), *xq = aligned_alloc(64, xs * MAX_C), *xt = aligned_alloc(64, xts * MAX_C);
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < MAX_R; i++) kt_weight_row(r, t, w + i * rb, n);
    if (t == HR_Q8_0) /* -128, which ggml's quantizer never writes but a file may hold: |w| is 128 */
        for (int64_t o = 0; o < (int64_t)rb * MAX_R; o += 7)
            if (o % (int64_t)sizeof(hr_block_q8_0) >= 2) w[o] = (char)-128;
    memset(xt, 0x5a, xts * MAX_C);
    for (int c = 0; c < MAX_C; c++) {
        for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r) * (i % 13 == 0 ? 4.0f : 1.0f);
        k->act_prep[t](x, xq + c * xs, n);
        e->tile_xprep[t](xq + c * xs, xt + c * xts, n);
    }
    check_tile(k, t, n, w, xq, xt, e->tile_x[t], HR_TILE_R, HR_TILE_C);
    if (e->tile_xw[t]) {
        const int R = e->xw_rows[t], C = e->xw_cols[t];
        CHECKF(R >= HR_TILE_R && R <= MAX_R && R % HR_TILE_R == 0 && C >= HR_TILE_C && C <= MAX_C && C % HR_TILE_C == 0,
               "%s %s: tile_xw shape %dx%d", k->name, hr_type_name(t), R, C);
        if (R <= MAX_R && C <= MAX_C) check_tile(k, t, n, w, xq, xt, e->tile_xw[t], R, C);
    }
    free(w), free(xq), free(xt), free(x);
}

/* hr_matmul over batches that use tile_x, the plain tile and vec_dot tails */
static void check_matmul(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    const int64_t rows = 39, toks[] = {4, 7, 9, 13, 70};
    const int64_t max_tok = 70;
    const size_t rb = hr_row_bytes(t, (uint64_t)n), xs = (hr_act_bytes(t, n) + 63) & ~(size_t)63;
    char *w = malloc(rb * rows), *xq = malloc(xs);
    float *X = malloc(sizeof(float) * (size_t)(n * max_tok)), *Y = malloc(sizeof(float) * (size_t)(rows * max_tok));
    float *D = malloc(sizeof(float) * (size_t)(rows * max_tok));
    for (int64_t i = 0; i < rows; i++) kt_weight_row(r, t, w + i * rb, n);
    for (int64_t i = 0; i < n * max_tok; i++) X[i] = hr_rng_normal(r);
    for (int64_t u = 0; u < max_tok; u++) {
        k->act_prep[t](X + u * n, xq, n);
        for (int64_t i = 0; i < rows; i++) k->vec_dot[t](n, &D[u * rows + i], w + i * rb, xq);
    }
    hr_mat W = {.type = t, .n_in = n, .n_out = rows, .row_bytes = rb, .data = w};
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c;
        hr_err e;
        if (hr_cpu_init(&c, nth, &e) < 0) { CHECKF(0, "%s", e.msg); break; }
        c.k = k;
        for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++) {
            CHECK(hr_matmul(&c, &W, X, toks[ti], Y, &e) == 0);
            int bad = 0;
            for (int64_t u = 0; u < toks[ti] && !bad; u++)
                for (int64_t i = 0; i < rows && !bad; i++)
                    if (!same(Y[u * rows + i], D[u * rows + i])) {
                        CHECKF(0, "%s matmul %s n=%lld %lld tokens %d threads: tok %lld row %lld %.9g vs vec_dot %.9g",
                               k->name, hr_type_name(t), (long long)n, (long long)toks[ti], nth, (long long)u,
                               (long long)i, Y[u * rows + i], D[u * rows + i]);
                        bad = 1;
                    }
        }
        hr_cpu_free(&c);
    }
    free(w), free(xq), free(X), free(Y), free(D);
}

/* hr_rows_dot (attention's scores) with and without its xt rows: every output vec_dot's */
static void check_rows_dot(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    const int64_t rows = 11;
    const size_t rb = hr_row_bytes(t, (uint64_t)n), xb = hr_rows_dot_xbytes(k, t, n);
    const size_t xa = hr_act_bytes(t, n), xs = ((xa > xb ? xa : xb) + 63) & ~(size_t)63;
    char *w = malloc(rb * rows), *xq = aligned_alloc(64, xs * MAX_C), *xt = aligned_alloc(64, xs * MAX_C);
    float *x = malloc(sizeof(float) * (size_t)n), y[MAX_C * 11], d;
    CHECKF(xb > 0, "%s %s: tile_x but no re-laid row size", k->name, hr_type_name(t));
    for (int64_t i = 0; i < rows; i++) kt_weight_row(r, t, w + i * rb, n);
    for (int c = 0; c < MAX_C; c++) {
        for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r);
        k->act_prep[t](x, xq + c * xs, n);
    }
    for (int with_xt = 0; with_xt < 2; with_xt++)
        for (int32_t nx = 1; nx <= MAX_C; nx++)
            for (int64_t nr = 1; nr <= rows; nr += 3) {
                hr_rows_dot(k, t, n, w, rb, nr, xq, xs, nx, y, (size_t)rows, with_xt ? xt : NULL);
                for (int32_t c = 0; c < nx; c++)
                    for (int64_t i = 0; i < nr; i++) {
                        k->vec_dot[t](n, &d, w + i * rb, xq + c * xs);
                        CHECKF(same(d, y[c * rows + i]), "%s rows_dot %s n=%lld xt %d: %d x %lld, (%lld, %d)", k->name,
                               hr_type_name(t), (long long)n, with_xt, nx, (long long)nr, (long long)i, c);
                    }
            }
    free(w), free(xq), free(xt), free(x);
}

/* tile16 (16 rows x panels of 16 tokens; kernels_impl.h) where a table has it outside the AMX
 * table (test_kernels_amx.c): every n_x from 1 past one pass of 64 tokens, rows and tokens at
 * an offset, each output vec_dot's bit for bit, nothing written past n_x. */
#define T16_TOK 72
static void check_tile16(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    const hr_kernels_ext *e = hr_kernels_ext_of(k);
    const int rows = 16 + 5, toks = T16_TOK + 4;
    const size_t rb = hr_row_bytes(t, (uint64_t)n), xs = (hr_act_bytes(t, n) + 63) & ~(size_t)63;
    const size_t pb = (e->tile16_bytes[t](n) + 63) & ~(size_t)63;
    char *w = malloc(rb * rows), *xq = aligned_alloc(64, xs * toks), *panel = aligned_alloc(64, pb * 5);
    float *x = malloc(sizeof(float) * (size_t)n), *want = malloc(sizeof(float) * (size_t)(rows * toks));
    float *yt = malloc(sizeof(float) * (T16_TOK * 16 + 8));
    for (int i = 0; i < rows; i++) kt_weight_row(r, t, w + i * rb, n);
    for (int c = 0; c < toks; c++) {
        for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r) * (i % 11 == 0 ? 4.0f : 1.0f);
        k->act_prep[t](x, xq + c * xs, n);
        for (int i = 0; i < rows; i++) k->vec_dot[t](n, &want[c * rows + i], w + i * rb, xq + c * xs);
    }
    int bad = 0;
    for (int worst = 0; worst < 2; worst++) {
    if (worst) { /* every value at its largest, every activation at 127 (x + 128 = 255): the
                  * AVX2 panels' int16 sums at their bound */
        size_t o0 = 0, o1 = 0;
        if (t == HR_Q4_K) o0 = offsetof(hr_block_q4_K, qs), o1 = sizeof(hr_block_q4_K);
        if (t == HR_Q5_K) o0 = offsetof(hr_block_q5_K, qh), o1 = sizeof(hr_block_q5_K);
        if (t == HR_Q6_K) o0 = 0, o1 = offsetof(hr_block_q6_K, scales);
        if (t == HR_Q3_K) o0 = 0, o1 = offsetof(hr_block_q3_K, scales);
        if (t == HR_Q2_K) o0 = offsetof(hr_block_q2_K, qs), o1 = offsetof(hr_block_q2_K, d);
        if (!o1) break;
        const size_t bs = hr_row_bytes(t, HR_QK_K);
        for (int i = 0; i < rows; i++)
            for (size_t b = 0; b < rb; b += bs) memset(w + i * rb + b + o0, 0xff, o1 - o0);
        /* Q8_K maps a super-block's first largest |x| to -127: the others, of the other sign, to 127 */
        for (int64_t i = 0; i < n; i++) x[i] = i % HR_QK_K ? -1.0f : 1.0f;
        for (int c = 0; c < toks; c++) {
            k->act_prep[t](x, xq + c * xs, n);
            for (int i = 0; i < rows; i++) k->vec_dot[t](n, &want[c * rows + i], w + i * rb, xq + c * xs);
        }
        CHECKF((int8_t)xq[offsetof(hr_block_q8_K, qs) + 1] == 127, "worst case: x quantized to %d",
               (int8_t)xq[offsetof(hr_block_q8_K, qs) + 1]);
    }
    for (int nx = 1; nx <= T16_TOK; nx += nx < 20 ? 1 : 7) {
        const int c0 = nx % 3, r0 = nx % 5;
        memset(panel, 0x5a, pb * 5);
        for (int p = 0; 16 * p < nx; p++)
            e->tile16_prep[t](xq + (c0 + 16 * p) * xs, xs, nx - 16 * p < 16 ? nx - 16 * p : 16, panel + p * pb, n);
        for (int i = 0; i < T16_TOK * 16 + 8; i++) yt[i] = -1.0f;
        e->tile16[t](n, w + r0 * rb, rb, panel, pb, yt, 16, nx);
        for (int u = 0; u < nx; u++)
            for (int i = 0; i < 16; i++) bad += !same(yt[u * 16 + i], want[(c0 + u) * rows + r0 + i]);
        for (int i = nx * 16; i < T16_TOK * 16 + 8; i++) bad += yt[i] != -1.0f;
    }
    }
    CHECKF(bad == 0, "%s tile16 %s n=%lld: %d results differ from vec_dot", k->name, hr_type_name(t), (long long)n, bad);
    free(w), free(xq), free(panel), free(x), free(want), free(yt);
}

int main(void) {
    hr_rng r = {12345};
    const hr_kernels *tabs[] = {hr_kernels_scalar(), hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx(), hr_kernels_neon()};
    int tested = 0;
    for (size_t ki = 0; ki < sizeof tabs / sizeof tabs[0]; ki++) {
        const hr_kernels *k = tabs[ki];
        if (!k) continue;
        const hr_kernels_ext *e = hr_kernels_ext_of(k);
        for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
            const uint32_t t = k_types[ti];
            if (e->tile16[t] && strcmp(k->name, "amx") != 0)
                for (int li = 0; li < 3; li++) check_tile16(k, t, lens(t, li), &r), tested++;
            if (!e->tile_x[t]) continue;
            CHECKF(e->tile_xprep[t] && e->tile_xbytes[t] && e->tile[t], "%s %s: tile_x without its prep, size or tile",
                   k->name, hr_type_name(t));
            if (!e->tile_xprep[t] || !e->tile_xbytes[t]) continue;
            for (int li = 0; li < N_LENS; li++) {
                check_direct(k, t, lens(t, li), &r);
                if (li < 3) check_matmul(k, t, lens(t, li), &r);
                if (li < 2) check_rows_dot(k, t, lens(t, li), &r);
            }
            tested++;
        }
    }
    if (!tested) {
        printf("no table on this CPU has tile_x kernels: nothing to test\n");
        return 77;
    }
    printf("%d (table, type) pairs with tile_x\n", tested);
    return TEST_END();
}
