/* The SIMD K-quant and IQ4_XS kernels (kquant_k_avx2.c, kquant_k_avx512.c) of every x86
 * table the CPU runs:
 *  - vec_dot against the scalar twin and against a dequantizer-only double reference,
 *    within a bound on float rounding (see TOL);
 *  - rows4 and tile bit-identical to the same table's vec_dot, directly and through
 *    hr_matmul (row counts that leave rows4/tile tails, 1 and several tokens);
 *  - the Q8_K prep byte-identical to the scalar prep, including ties, sign-mixed maxima
 *    and zero blocks.
 * Weights are random bytes with the F16 scale fields forced to finite moderate values
 * (kt_weight_row), so every bit pattern of codes and packed scales is exercised. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/matmul.h"
#include "kernel_rows.h"
#include "testutil.h"

#if defined(__x86_64__)
/* Both kernels form exact integer sums per super-block; float rounding enters only in
 * the int->float conversion, the product d_x*d_w, the fused add into a lane, the lane
 * and super-block sums (<= 11 super-blocks, 8 lanes) and, in the reference, the
 * dequantizers' float products. That is well under 40 roundings of 2^-24 relative to
 * the sum of |terms| (mag), so 4e-6 * mag (~67 roundings) never trips on correct code,
 * while any wrong code, scale or bit gives errors of the order of mag itself. */
#define TOL 4e-6

static const uint32_t k_types[] = {HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
static const int64_t k_n[] = {256, 512, 2816};
static const int64_t k_rows[] = {1, 3, 5, 7, 37};
#define N_TOK 5 /* one HR_TILE_C tile and a tail token */

static hr_vec_dot_fn scalar_twin(uint32_t t) {
    switch (t) {
    case HR_Q2_K: return hr_dot_q2_K_scalar;
    case HR_Q3_K: return hr_dot_q3_K_scalar;
    case HR_Q4_K: return hr_dot_q4_K_scalar;
    case HR_Q5_K: return hr_dot_q5_K_scalar;
    case HR_Q6_K: return hr_dot_q6_K_scalar;
    default: return hr_dot_iq4_xs_scalar;
    }
}

static void fill_x(hr_rng *r, float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r) * (i % 11 == 0 ? 5.0f : 1.0f);
}

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

typedef struct {
    uint32_t t;
    int64_t n, rows;
    size_t rb, xs;
    char *w, *xq;  /* rows x rb weights; N_TOK prepared activation rows, stride xs */
    float *x;      /* N_TOK x n */
} problem;

static void problem_make(problem *p, hr_rng *r, const hr_kernels *k, uint32_t t, int64_t n, int64_t rows) {
    p->t = t, p->n = n, p->rows = rows;
    p->rb = hr_row_bytes(t, (uint64_t)n);
    p->xs = (hr_act_bytes(t, n) + 63) & ~(size_t)63;
    p->w = malloc(p->rb * (size_t)rows);
    p->xq = malloc(p->xs * N_TOK);
    p->x = malloc(sizeof(float) * (size_t)(n * N_TOK));
    for (int64_t i = 0; i < rows; i++) kt_weight_row(r, t, p->w + i * p->rb, n);
    fill_x(r, p->x, n * N_TOK);
    for (int c = 0; c < N_TOK; c++) k->act_prep[t](p->x + c * n, p->xq + c * p->xs, n);
}

static void problem_free(problem *p) { free(p->w); free(p->xq); free(p->x); }

/* vec_dot vs the scalar twin and the reference; rows4 and tile vs vec_dot, bit for bit. */
static void check_kernels(const hr_kernels *k, const problem *p) {
    const hr_kernels_ext *e = hr_kernels_ext_of(k);
    const uint32_t t = p->t;
    const char *tn = hr_type_name(t);
    float *d = malloc(sizeof(float) * (size_t)(p->rows * N_TOK)); /* d[c*rows + r] */
    for (int c = 0; c < N_TOK; c++)
        for (int64_t i = 0; i < p->rows; i++) {
            const char *wr = p->w + i * p->rb, *xr = p->xq + c * p->xs;
            float s, s0;
            k->vec_dot[t](p->n, &s, wr, xr);
            scalar_twin(t)(p->n, &s0, wr, xr);
            double mag, ref = kt_ref_dot(t, wr, xr, p->n, &mag);
            CHECKF(fabs(s - s0) <= TOL * mag, "%s %s n=%lld: %.9g vs scalar %.9g (mag %g)", k->name, tn,
                   (long long)p->n, s, s0, mag);
            CHECKF(fabs(s - ref) <= TOL * mag, "%s %s n=%lld: %.9g vs reference %.9g (mag %g)", k->name, tn,
                   (long long)p->n, s, ref, mag);
            d[c * p->rows + i] = s;
        }
    CHECKF(e->rows4[t] && e->tile[t], "%s %s: rows4 or tile missing", k->name, tn);
    for (int64_t i = 0; e->rows4[t] && i + 4 <= p->rows; i += 4) {
        float y[5] = {0, 0, 0, 0, -7.5f};
        e->rows4[t](p->n, p->w + i * p->rb, p->rb, p->xq, 0, y, 0);
        for (int j = 0; j < 4; j++)
            CHECKF(same(y[j], d[i + j]), "%s rows4 %s n=%lld row %lld: %.9g vs vec_dot %.9g", k->name, tn,
                   (long long)p->n, (long long)(i + j), y[j], d[i + j]);
        CHECK(y[4] == -7.5f);
    }
    for (int64_t i = 0; e->tile[t] && i + HR_TILE_R <= p->rows; i += HR_TILE_R) {
        float y[HR_TILE_C][HR_TILE_R + 1];
        e->tile[t](p->n, p->w + i * p->rb, p->rb, p->xq, p->xs, &y[0][0], HR_TILE_R + 1);
        for (int c = 0; c < HR_TILE_C; c++)
            for (int j = 0; j < HR_TILE_R; j++)
                CHECKF(same(y[c][j], d[c * p->rows + i + j]), "%s tile %s n=%lld row %lld tok %d: %.9g vs %.9g",
                       k->name, tn, (long long)p->n, (long long)(i + j), c, y[c][j], d[c * p->rows + i + j]);
    }
    free(d);
}

/* hr_matmul with this table: decode (rows4 + vec_dot tails) and a batch (tiles + tails)
 * give vec_dot's values exactly, over 2 threads. */
static void check_matmul(const hr_kernels *k, const problem *p) {
    hr_cpu c;
    hr_err e;
    if (hr_cpu_init(&c, 2, &e) < 0) { CHECKF(0, "%s", e.msg); return; }
    c.k = k;
    hr_mat W = {.type = p->t, .n_in = p->n, .n_out = p->rows, .row_bytes = p->rb, .data = p->w};
    float *y = malloc(sizeof(float) * (size_t)(p->rows * N_TOK));
    for (int64_t nt = 1; nt <= N_TOK; nt += N_TOK - 1) {
        CHECK(hr_matmul(&c, &W, p->x, nt, y, &e) == 0);
        for (int64_t tok = 0; tok < nt; tok++)
            for (int64_t i = 0; i < p->rows; i++) {
                float s;
                k->vec_dot[p->t](p->n, &s, p->w + i * p->rb, p->xq + tok * p->xs);
                CHECKF(same(s, y[tok * p->rows + i]), "%s matmul %s n=%lld rows=%lld tok %lld/%lld row %lld", k->name,
                       hr_type_name(p->t), (long long)p->n, (long long)p->rows, (long long)tok, (long long)nt,
                       (long long)i);
            }
    }
    free(y);
    hr_cpu_free(&c);
}

/* Activation rows that stress the prep: ties after scaling (halves of the step), the
 * largest magnitude present with both signs (the first one sets the sign), zero blocks. */
static void prep_case(hr_rng *r, float *x, int64_t n, int kind) {
    fill_x(r, x, n);
    for (int64_t b = 0; b < n / HR_QK_K; b++) {
        float *v = x + b * HR_QK_K;
        if (kind == 1) { /* max 1, so iscale = -127: many x*iscale land on k + 0.5 */
            for (int j = 0; j < HR_QK_K; j++) v[j] = ((float)((int)(hr_rng_next(r) % 254) - 127) + 0.5f) / 127.0f;
            v[b % HR_QK_K] = 1.0f;
        } else if (kind == 2) { /* -m before +m, or +m before -m */
            const int i = (int)(hr_rng_next(r) % 128), j = i + 1 + (int)(hr_rng_next(r) % 127);
            v[i] = b & 1 ? 9.0f : -9.0f;
            v[j] = -v[i];
        } else if (kind == 3 && b % 2 == 0) {
            memset(v, 0, HR_QK_K * sizeof *v);
        }
    }
}

static void check_prep(hr_rng *r, int64_t n) {
    if (!hr_kernels_avx2()) return;
    float *x = malloc(sizeof(float) * (size_t)n);
    size_t bytes = hr_act_bytes(HR_Q4_K, n);
    char *a = malloc(bytes), *b = malloc(bytes);
    for (int kind = 0; kind < 4; kind++) {
        prep_case(r, x, n, kind);
        memset(a, 0x5a, bytes);
        memset(b, 0xa5, bytes);
        hr_prep_q8_K_scalar(x, a, n);
        hr_prep_q8_K_avx2(x, b, n);
        CHECKF(memcmp(a, b, bytes) == 0, "prep q8_K avx2 n=%lld case %d differs from scalar", (long long)n, kind);
    }
    free(x); free(a); free(b);
}

int main(void) {
    hr_rng r = {2024};
    const hr_kernels *tabs[] = {hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx()};
    if (!tabs[0]) {
        printf("CPU without AVX2+FMA+F16C: nothing to test\n");
        return 77;
    }
    for (size_t ni = 0; ni < sizeof k_n / sizeof k_n[0]; ni++) check_prep(&r, k_n[ni]);
    for (size_t ki = 0; ki < 2; ki++) {
        const hr_kernels *k = tabs[ki];
        if (!k) { printf("no %s table on this CPU: skipped\n", ki ? "avx512" : "avx2"); continue; }
        for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
            const uint32_t t = k_types[ti];
            CHECKF(k->vec_dot[t] && k->act_prep[t], "%s lacks %s", k->name, hr_type_name(t));
            if (!k->vec_dot[t] || !k->act_prep[t]) continue;
            for (size_t ni = 0; ni < sizeof k_n / sizeof k_n[0]; ni++)
                for (size_t ri = 0; ri < sizeof k_rows / sizeof k_rows[0]; ri++) {
                    problem p;
                    problem_make(&p, &r, k, t, k_n[ni], k_rows[ri]);
                    check_kernels(k, &p);
                    check_matmul(k, &p);
                    problem_free(&p);
                }
        }
    }
    return TEST_END();
}
#else
int main(void) {
    printf("not x86: no AVX2/AVX-512 K-quant kernels to test\n");
    return 77;
}
#endif
