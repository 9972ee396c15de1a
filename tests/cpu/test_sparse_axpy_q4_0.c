/* The SIMD Q4_0 axpy kernels bit for bit against their fused scalar twin: every output
 * y[k] = fmaf(w[k], a, y[k]) over the rows in order, zero coefficients skipped, with w
 * hr_dequant_row's exact values (the SIMD decoders form them exactly; only the fused
 * multiply-add separates the SIMD kernels from the unfused scalar table, so a tolerance
 * test could not see a reordered or mis-scaled block). Row lengths below, at and around
 * the AVX-512 one-token kernel's 8-block groups (1, 7, 8, 9, 16 and 129 blocks), 1..4
 * rows per call, a zero coefficient in each position, with and without next rows, and
 * 1..3 tokens (the batch kernel). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/sparse.h"
#include "randw.h"
#include "testutil.h"

#define MAX_N 4128
#define MAX_TOK 3

static void twin(int64_t n, int n_rows, const float *const *wf, const float *a, int64_t n_tok, float *y) {
    for (int64_t t = 0; t < n_tok; t++)
        for (int r = 0; r < n_rows; r++) {
            const float at = a[t * HR_AXPY_ROWS + r];
            if (at == 0.0f) continue;
            for (int64_t k = 0; k < n; k++) y[t * n + k] = fmaf(wf[r][k], at, y[t * n + k]);
        }
}

static void check_case(const hr_axpy_kernels *ax, int64_t n, int n_rows, int zero_at, int64_t n_tok, int with_next,
                       hr_rng *rng) {
    const size_t rb = hr_row_bytes(HR_Q4_0, (uint64_t)n);
    char *w = malloc(rb * HR_AXPY_ROWS * 2);
    float *wf = malloc(sizeof(float) * (size_t)n * HR_AXPY_ROWS);
    float *y = malloc(sizeof(float) * (size_t)(n * n_tok)), *ref = malloc(sizeof(float) * (size_t)(n * n_tok));
    randw_mat(HR_Q4_0, w, rb, n, HR_AXPY_ROWS * 2, rng);
    const void *rows[HR_AXPY_ROWS], *next[HR_AXPY_ROWS];
    const float *wfr[HR_AXPY_ROWS];
    float a[MAX_TOK * HR_AXPY_ROWS];
    for (int r = 0; r < HR_AXPY_ROWS; r++) {
        rows[r] = w + (size_t)(2 * r + 1) * rb; /* scattered: every other row */
        next[r] = w + (size_t)(2 * r) * rb;
        hr_dequant_row(HR_Q4_0, rows[r], wf + r * n, n);
        wfr[r] = wf + r * n;
    }
    for (int i = 0; i < MAX_TOK * HR_AXPY_ROWS; i++) a[i] = i % HR_AXPY_ROWS == zero_at ? 0.0f : hr_rng_normal(rng);
    for (int64_t k = 0; k < n * n_tok; k++) y[k] = ref[k] = hr_rng_normal(rng);
    ax->axpy[HR_Q4_0](n, n_rows, rows, with_next ? next : NULL, a, n_tok, y, (size_t)n);
    twin(n, n_rows, wfr, a, n_tok, ref);
    int64_t bad = 0;
    for (int64_t k = 0; k < n * n_tok; k++) bad += memcmp(&y[k], &ref[k], sizeof(float)) != 0;
    CHECKF(bad == 0, "%s n=%lld rows=%d zero at %d tok=%lld next=%d: %lld outputs differ", ax->name, (long long)n,
           n_rows, zero_at, (long long)n_tok, with_next, (long long)bad);
    free(w); free(wf); free(y); free(ref);
}

int main(void) {
    const hr_axpy_kernels *tabs[] = {hr_axpy_avx2(), hr_axpy_avx512()};
    const int64_t ns[] = {32, 224, 256, 288, 512, MAX_N};
    hr_rng rng = {11};
    for (size_t k = 0; k < 2; k++) {
        if (!tabs[k]) continue;
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (int n_rows = 1; n_rows <= HR_AXPY_ROWS; n_rows++)
                for (int zero_at = -1; zero_at < n_rows; zero_at++)
                    for (int64_t nt = 1; nt <= MAX_TOK; nt++)
                        for (int nx = 0; nx < 2; nx++) check_case(tabs[k], ns[i], n_rows, zero_at, nt, nx, &rng);
    }
    TEST_END();
}
