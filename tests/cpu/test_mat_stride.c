/* Matrices whose rows are further apart than their size (hr_mat.stride: an FFN's neuron
 * bundles, gate, up and down_t rows of one neuron adjacent): hr_matmul (decode and a batch),
 * hr_matmul_pair, hr_gather_matmul and hr_sparse_axpy on three matrices interleaved row by
 * row give, bit for bit, what they give on the same matrices packed, for the types with a
 * gather4, with rows4_x, and with the row-copy gather, at 1 and 2 threads; bytes past each
 * row in the interleaved buffer are poisoned with NaN so a kernel that strays reads them;
 * a stride under the row size is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sparse.h"
#include "kernel_rows.h"
#include "testutil.h"

#define N_OUT 37 /* not a multiple of 4, 16 or a chunk */
#define N_TOK 5
#define N_IDX 13

static const uint32_t k_types[] = {HR_F32, HR_F16, HR_Q8_0, HR_Q4_0, HR_Q5_0, HR_IQ4_NL, HR_Q4_K, HR_Q6_K};

static int same(const float *a, const float *b, int64_t n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

static void check_type(uint32_t t, int nth, hr_rng *r) {
    const int64_t n = kt_block(t) == HR_QK_K ? 512 : 288; /* 288: a ragged 8-block group */
    const size_t rb = hr_row_bytes(t, (uint64_t)n), st = 3 * rb;
    char *packed = malloc(3 * rb * N_OUT), *bund = malloc(st * N_OUT);
    float *X = malloc(sizeof(float) * N_TOK * n), *A = malloc(sizeof(float) * N_TOK * N_IDX);
    const size_t ny = (size_t)N_TOK * (size_t)(n > 2 * N_OUT ? n : 2 * N_OUT); /* axpy: n per token */
    float *y0 = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * ny);
    int32_t idx[N_IDX];
    for (int64_t i = 0; i < 3 * N_OUT; i++) kt_weight_row(r, t, packed + i * rb, n);
    const float nan = nanf("");
    for (size_t i = 0; i < st * N_OUT / sizeof(float); i++) memcpy(bund + i * sizeof(float), &nan, sizeof nan);
    for (int64_t o = 0; o < N_OUT; o++) /* matrix k's row o at o * st + k * rb; the last is poisoned */
        for (int k = 0; k < 2; k++) memcpy(bund + o * st + k * rb, packed + (k * N_OUT + o) * rb, rb);
    for (int64_t i = 0; i < N_TOK * n; i++) X[i] = hr_rng_normal(r);
    for (int i = 0; i < N_IDX; i++) idx[i] = (int32_t)(i * 3 % N_OUT); /* sorted below, some adjacent */
    for (int i = 1; i < N_IDX; i++)
        for (int k = i; k > 0 && idx[k] < idx[k - 1]; k--) {
            int32_t s = idx[k];
            idx[k] = idx[k - 1], idx[k - 1] = s;
        }
    for (int i = 0; i < N_TOK * N_IDX; i++) A[i] = i % 5 == 2 ? 0.0f : hr_rng_normal(r);
    hr_cpu c;
    hr_err e = {{0}};
    hr_sparse_ws ws;
    hr_sparse_ws_init(&ws);
    CHECK(hr_cpu_init(&c, nth, &e) == 0 && hr_sparse_reserve(&ws, &c, N_TOK, n, &e) == 0);
    const char *name = hr_type_name(t);
    hr_mat P[2], B[2];
    for (int k = 0; k < 2; k++) {
        P[k] = (hr_mat){.type = t, .n_in = n, .n_out = N_OUT, .row_bytes = rb, .data = packed + k * N_OUT * rb};
        B[k] = (hr_mat){.type = t, .n_in = n, .n_out = N_OUT, .row_bytes = rb, .data = bund + k * rb, .stride = st};
    }
    for (int nt = 1; nt <= N_TOK; nt += N_TOK - 1) {
        CHECK(hr_matmul(&c, &P[1], X, nt, y0, &e) == 0 && hr_matmul(&c, &B[1], X, nt, y1, &e) == 0);
        CHECKF(same(y0, y1, nt * N_OUT), "%s matmul, %d token(s), %d thread(s)", name, nt, nth);
        CHECK(hr_matmul_pair(&c, &P[0], &P[1], X, nt, y0, y0 + nt * N_OUT, NULL, &e) == 0);
        CHECK(hr_matmul_pair(&c, &B[0], &B[1], X, nt, y1, y1 + nt * N_OUT, NULL, &e) == 0);
        CHECKF(same(y0, y1, 2 * nt * N_OUT), "%s matmul_pair, %d token(s), %d thread(s)", name, nt, nth);
        CHECK(hr_gather_matmul(&c, &P[0], X, nt, idx, N_IDX, y0, &e) == 0);
        CHECK(hr_gather_matmul(&c, &B[0], X, nt, idx, N_IDX, y1, &e) == 0);
        CHECKF(same(y0, y1, nt * N_IDX), "%s gather, %d token(s), %d thread(s)", name, nt, nth);
        /* the axpy's rows are n long: down_t {n, N_OUT}, here the first matrix again */
        CHECK(hr_sparse_axpy_ws(&c, &ws, &P[0], A, nt, idx, N_IDX, y0, &e) == 0);
        CHECK(hr_sparse_axpy_ws(&c, &ws, &B[0], A, nt, idx, N_IDX, y1, &e) == 0);
        CHECKF(same(y0, y1, nt * n), "%s axpy, %d token(s), %d thread(s)", name, nt, nth);
        for (int64_t i = 0; i < nt * n; i++) CHECKF(isfinite(y1[i]), "%s axpy read a poisoned byte", name);
    }
    hr_mat bad = B[0];
    bad.stride = rb - 1;
    CHECK(hr_matmul(&c, &bad, X, 1, y1, &e) < 0);
    CHECK(strstr(e.msg, "stride") != NULL);
    CHECK(hr_gather_matmul(&c, &bad, X, 1, idx, N_IDX, y1, &e) < 0 && strstr(e.msg, "stride") != NULL);
    CHECK(hr_sparse_axpy_ws(&c, &ws, &bad, A, 1, idx, N_IDX, y1, &e) < 0 && strstr(e.msg, "stride") != NULL);
    hr_sparse_ws_free(&ws);
    hr_cpu_free(&c);
    free(packed), free(bund), free(X), free(A), free(y0), free(y1);
}

int main(void) {
    hr_rng r = {2024};
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        for (int nth = 1; nth <= 2; nth++) check_type(k_types[i], nth, &r);
    return TEST_END();
}
