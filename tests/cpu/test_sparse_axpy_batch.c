/* hr_sparse_axpy with an ascending index list: a token's output is bit-identical whether
 * it runs alone or in a batch with other tokens, and whether the list holds only its
 * active rows or a superset whose extra rows have zero coefficients (the union a batch
 * computes) — for every weight type, 1..3 threads, batches crossing the 16-token group, with
 * each kernel table this CPU has (a batch takes the table's panel kernel where it has one, a
 * token alone its axpy: they must agree). */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sparse.h"
#include "formats/types.h"
#include "randw.h"
#include "testutil.h"

#define N_IN 512 /* two K-quant super-blocks, 16 blocks of the 32-element types */
#define N_OUT 700
#define N_TOK 21

/* Block types: random bytes with finite moderate scales (tests/randw.h). */
static void fill_weights(uint32_t type, uint8_t *w, size_t rb, hr_rng *r) { randw_mat(type, w, rb, N_IN, N_OUT, r); }

static void check_type(const hr_axpy_kernels *ax, uint32_t type, int nth) {
    hr_rng r = {7 + type};
    const size_t rb = hr_row_bytes(type, N_IN);
    uint8_t *w = malloc(rb * N_OUT);
    fill_weights(type, w, rb, &r);
    hr_mat Wt = {.type = type, .n_in = N_IN, .n_out = N_OUT, .row_bytes = rb, .data = w};
    /* token t's active rows: a random third; the union list is every row any token uses */
    static uint8_t act[N_TOK][N_OUT];
    static float coef[N_TOK][N_OUT], A_union[N_TOK * N_OUT], A_own[N_OUT], Y_batch[N_TOK * N_IN], Y_alone[N_IN];
    int32_t uni[N_OUT], own[N_OUT];
    int64_t nu = 0;
    for (int t = 0; t < N_TOK; t++)
        for (int o = 0; o < N_OUT; o++) act[t][o] = hr_rng_next(&r) % 3 == 0, coef[t][o] = hr_rng_normal(&r);
    for (int o = 0; o < N_OUT; o++) {
        int any = 0;
        for (int t = 0; t < N_TOK; t++) any |= act[t][o];
        if (any) uni[nu++] = o;
    }
    for (int t = 0; t < N_TOK; t++)
        for (int64_t i = 0; i < nu; i++) A_union[t * nu + i] = act[t][uni[i]] ? coef[t][uni[i]] : 0.0f;
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, nth, &e) == 0);
    hr_sparse_ws ws;
    hr_sparse_ws_init(&ws);
    ws.ax = ax;
    CHECK(hr_sparse_axpy_ws(&c, &ws, &Wt, A_union, N_TOK, uni, nu, Y_batch, &e) == 0);
    int bad = 0;
    for (int t = 0; t < N_TOK; t++) {
        int64_t n = 0;
        for (int o = 0; o < N_OUT; o++)
            if (act[t][o]) own[n] = o, A_own[n++] = coef[t][o];
        CHECK(hr_sparse_axpy_ws(&c, &ws, &Wt, A_own, 1, own, n, Y_alone, &e) == 0);
        bad += memcmp(Y_alone, Y_batch + t * N_IN, sizeof Y_alone) != 0;
    }
    CHECKF(bad == 0, "%s %s, %d threads: %d of %d tokens differ between alone and batched", ax->name, hr_type_name(type), nth,
           bad, N_TOK);
    hr_sparse_ws_free(&ws);
    hr_cpu_free(&c);
    free(w);
}

int main(void) {
    const uint32_t types[] = {HR_F32,   HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q4_1, HR_Q5_0, HR_Q5_1,
                              HR_IQ4_NL, HR_MXFP4, HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
    const hr_axpy_kernels *tables[] = {hr_axpy_scalar(), hr_axpy_avx2(), hr_axpy_avx512()};
    for (size_t k = 0; k < sizeof tables / sizeof tables[0]; k++)
        for (size_t i = 0; tables[k] && i < sizeof types / sizeof types[0]; i++)
            for (int nth = 1; nth <= 3; nth++) check_type(tables[k], types[i], nth);
    TEST_END();
}
