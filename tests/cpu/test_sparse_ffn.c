/* hr_sparse_ffn_fused: one token's gated FFN in one pass gives, bit for bit, what
 * hr_gather_matmul (gate, then up), the activation and hr_sparse_axpy_ws give, for every type
 * with a gather4 kernel, on the default table and the AVX2 and AVX-VNNI ones, 1-3 threads,
 * neuron lists empty, of one, sparse, ragged (not a multiple of 4) and complete, with the three
 * matrices packed or bundled per neuron (hr_mat.stride); an activation that zeroes about half
 * the neurons exercises the axpy's skipping; bad arguments are refused. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/sparse.h"
#include "kernel_rows.h"
#include "testutil.h"

#define N_FF 203 /* neurons: not a multiple of 4 or of a chunk */

static const uint32_t k_types[] = {HR_F32, HR_F16, HR_BF16, HR_Q8_0, HR_Q4_0, HR_Q4_K, HR_Q6_K, HR_IQ4_XS};

static void reglu(float *a, const float *g, const float *u, int64_t n, void *arg) {
    int *calls = arg;
    ++*calls;
    for (int64_t i = 0; i < n; i++) a[i] = (g[i] > 0 ? g[i] : 0.0f) * u[i];
}

static int same(const float *a, const float *b, int64_t n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

/* tab: a kernel table to run (the 256-bit ones, which an AVX-512 machine's default never reaches), or
 * NULL: the default */
static void check_type(uint32_t t, const hr_kernels *tab, hr_rng *r) {
    const int64_t n = kt_block(t) == HR_QK_K ? 512 : 288;
    const size_t rb = hr_row_bytes(t, (uint64_t)n);
    char *packed = malloc(3 * rb * N_FF), *bund = malloc(3 * rb * N_FF);
    for (int64_t i = 0; i < 3 * N_FF; i++) kt_weight_row(r, t, packed + i * rb, n);
    for (int64_t i = 0; i < N_FF; i++)
        for (int k = 0; k < 3; k++) memcpy(bund + (3 * i + k) * rb, packed + (k * N_FF + i) * rb, rb);
    float *x = malloc(sizeof(float) * n), *Y0 = malloc(sizeof(float) * n), *Y1 = malloc(sizeof(float) * n);
    float *G0 = malloc(sizeof(float) * N_FF), *U0 = malloc(sizeof(float) * N_FF), *A0 = malloc(sizeof(float) * N_FF);
    float *G1 = malloc(sizeof(float) * N_FF), *U1 = malloc(sizeof(float) * N_FF), *A1 = malloc(sizeof(float) * N_FF);
    int32_t *idx = malloc(sizeof(int32_t) * N_FF);
    for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r);
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c;
        hr_err e = {{0}};
        hr_sparse_ws ws;
        hr_sparse_ws_init(&ws);
        CHECK(hr_cpu_init(&c, nth, &e) == 0);
        if (tab) c.k = tab;
        if (tab && !hr_sparse_ffn_fits(&c, &(hr_mat){.type = t})) { /* that table fuses other types */
            hr_sparse_ws_free(&ws);
            hr_cpu_free(&c);
            continue;
        }
        CHECKF(hr_sparse_ffn_fits(&c, &(hr_mat){.type = t}), "%s: no gather4 in the %s table", hr_type_name(t), c.k->name);
        for (int layout = 0; layout < 2; layout++) {
            hr_mat M[3];
            for (int k = 0; k < 3; k++)
                M[k] = layout ? (hr_mat){.type = t, .n_in = n, .n_out = N_FF, .row_bytes = rb, .data = bund + k * rb, .stride = 3 * rb}
                              : (hr_mat){.type = t, .n_in = n, .n_out = N_FF, .row_bytes = rb, .data = packed + k * N_FF * rb};
            for (int list = 0; list < 5; list++) {
                int64_t k = 0;
                for (int64_t i = 0; i < N_FF; i++) {
                    const bool on = list == 1 ? i == N_FF / 2 : list == 2 ? i % 9 == 4 : list == 3 ? i % 3 != 0 : list == 4;
                    if (on) idx[k++] = (int32_t)i;
                }
                int calls = 0;
                CHECK(hr_gather_matmul(&c, &M[0], x, 1, idx, k, G0, &e) == 0);
                CHECK(hr_gather_matmul(&c, &M[1], x, 1, idx, k, U0, &e) == 0);
                reglu(A0, G0, U0, k, &calls);
                CHECK(hr_sparse_axpy_ws(&c, &ws, &M[2], A0, 1, idx, k, Y0, &e) == 0);
                calls = 0;
                CHECKF(hr_sparse_ffn_fused(&c, &ws, &M[0], &M[1], &M[2], x, idx, k, reglu, &calls, G1, U1, A1, Y1, &e) == 0,
                       "%s", e.msg);
                const char *what = layout ? "bundled" : "packed";
                CHECKF(same(G0, G1, k) && same(U0, U1, k) && same(A0, A1, k), "%s %s list %d, %d thread(s): gate/up/act differ",
                       hr_type_name(t), what, list, nth);
                CHECKF(same(Y0, Y1, n), "%s %s list %d (%lld neurons), %d thread(s): output differs", hr_type_name(t), what,
                       list, (long long)k, nth);
                /* the activation ran per group as the axpy reached it (counted unshared at 1 thread) */
                if (nth == 1) CHECK(calls >= (k + 3) / 4 && (k == 0 || calls >= 1));
            }
            /* bad arguments */
            int calls = 0;
            idx[0] = 5, idx[1] = 3;
            CHECK(hr_sparse_ffn_fused(&c, &ws, &M[0], &M[1], &M[2], x, idx, 2, reglu, &calls, G1, U1, A1, Y1, &e) < 0 &&
                  strstr(e.msg, "ascending"));
            hr_mat other = M[1];
            other.type = t == HR_F32 ? HR_F16 : HR_F32;
            CHECK(hr_sparse_ffn_fused(&c, &ws, &M[0], &other, &M[2], x, idx, 1, reglu, &calls, G1, U1, A1, Y1, &e) < 0);
            idx[0] = N_FF;
            CHECK(hr_sparse_ffn_fused(&c, &ws, &M[0], &M[1], &M[2], x, idx, 1, reglu, &calls, G1, U1, A1, Y1, &e) < 0 &&
                  strstr(e.msg, "outside"));
            CHECK(hr_sparse_ffn_fused(&c, &ws, &M[0], &M[1], &M[2], x, idx, 1, NULL, NULL, G1, U1, A1, Y1, &e) < 0);
        }
        hr_sparse_ws_free(&ws);
        hr_cpu_free(&c);
    }
    free(packed), free(bund), free(x), free(Y0), free(Y1), free(G0), free(U0), free(A0), free(G1), free(U1), free(A1), free(idx);
}

int main(void) {
    hr_rng r = {99};
    const hr_kernels *tabs[] = {NULL, hr_kernels_avx2(), hr_kernels_avxvnni()};
    for (size_t ti = 0; ti < sizeof tabs / sizeof tabs[0]; ti++) {
        if (ti && !tabs[ti]) continue;
        for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) check_type(k_types[i], tabs[ti], &r);
    }
    return TEST_END();
}
