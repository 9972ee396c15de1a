/* hr_gather_matmul: each gathered result equals, bit for bit, both the same row of
 * hr_matmul and the table's own vec_dot on that row and the prepared activations
 * (computed here), for every kernel table, thread count, batch size and index list
 * (empty, one, unsorted with repeats, all rows forwards and backwards); SIMD tables
 * agree with the scalar one within the float accumulation bound; bad input fails. Every
 * weight type whose table has a vec_dot is covered (the list is printed); weights of the
 * block types are random bytes with finite moderate scales (tests/randw.h). The gather4
 * kernels (scattered rows, decode) are also called directly, rows in every order and the
 * prefetched rows anywhere, against vec_dot bit for bit (F32/F16/BF16, Q4_0, Q8_0, the
 * K-quants and IQ4_XS: ragged block groups and K-quant rows of 1 and 5 super-blocks reach
 * both of the AVX-512 Q4_K/Q5_K kernel's loops); types without gather4 copy rows to a
 * buffer (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 here). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/sparse.h"
#include "randw.h"
#include "testutil.h"

typedef struct {
    uint32_t t;
    int64_t n_in, n_out;
} shape;

typedef struct {
    const int32_t *idx;
    int64_t n;
    const char *what;
} idx_list;

#define MAX_TOK 5
#define MAX_IDX 200

static int64_t make_lists(int64_t n_out, hr_rng *r, int32_t *buf, idx_list *L) {
    int64_t k = 0, used = 0;
    L[k++] = (idx_list){buf, 0, "empty"};
    buf[used] = (int32_t)(n_out - 1);
    L[k++] = (idx_list){buf + used, 1, "one"};
    used += 1;
    for (int64_t i = 0; i < 23; i++) buf[used + i] = (int32_t)(hr_rng_next(r) % (uint64_t)n_out);
    L[k++] = (idx_list){buf + used, 23, "unsorted, repeats"};
    used += 23;
    for (int64_t i = 0; i < n_out; i++) buf[used + i] = (int32_t)i;
    L[k++] = (idx_list){buf + used, n_out, "all"};
    used += n_out;
    for (int64_t i = 0; i < n_out; i++) buf[used + i] = (int32_t)(n_out - 1 - i);
    L[k++] = (idx_list){buf + used, n_out, "all reversed"};
    used += n_out;
    int64_t m = MAX_IDX - used;
    for (int64_t i = 0; i < m; i++) buf[used + i] = (int32_t)(hr_rng_next(r) % (uint64_t)n_out);
    L[k++] = (idx_list){buf + used, m, "many random"};
    return k;
}

/* The block type act_prep writes for weight type t (ggml's vec_dot_type). */
static uint32_t act_type(uint32_t t) {
    switch (t) {
    case HR_Q8_0: case HR_Q4_0: case HR_Q5_0: case HR_IQ4_NL: case HR_MXFP4: return HR_Q8_0;
    case HR_Q4_1: case HR_Q5_1: return HR_Q8_1;
    case HR_Q2_K: case HR_Q3_K: case HR_Q4_K: case HR_Q5_K: case HR_Q6_K: case HR_IQ4_XS: return HR_Q8_K;
    default: return t; /* float types: F32 kept, F16 / BF16 rounded */
    }
}

static void run_case(shape s, const hr_kernels *k, hr_rng *r) {
    size_t rb = hr_row_bytes(s.t, (uint64_t)s.n_in);
    char *w = malloc(rb * s.n_out);
    float *tmp = malloc(s.n_in * sizeof *tmp);
    float *X = malloc(MAX_TOK * s.n_in * sizeof *X);
    float *Yf = malloc(MAX_TOK * s.n_out * sizeof *Yf);
    float *Yg = malloc(MAX_TOK * MAX_IDX * sizeof *Yg), *Ys = malloc(MAX_TOK * MAX_IDX * sizeof *Ys);
    float *dots = malloc(MAX_TOK * s.n_out * sizeof *dots);
    double *mag = malloc(MAX_TOK * s.n_out * sizeof *mag);
    void *xq = malloc(hr_act_bytes(s.t, s.n_in) + 64);
    float *xf = malloc(s.n_in * sizeof *xf);
    int32_t buf[MAX_IDX];
    idx_list L[8];
    randw_mat(s.t, w, rb, s.n_in, s.n_out, r);
    for (int64_t i = 0; i < MAX_TOK * s.n_in; i++) X[i] = hr_rng_normal(r);
    /* the definition: this table's vec_dot on its own prepared activations */
    for (int64_t t = 0; t < MAX_TOK; t++) {
        k->act_prep[s.t](X + t * s.n_in, xq, s.n_in);
        for (int64_t o = 0; o < s.n_out; o++) k->vec_dot[s.t](s.n_in, &dots[t * s.n_out + o], w + o * rb, xq);
        /* sum |w x| over the prepared activations (both tables prepare identically),
         * for the SIMD-vs-scalar bound */
        hr_dequant_row(act_type(s.t), xq, xf, s.n_in);
        for (int64_t o = 0; o < s.n_out; o++) {
            hr_dequant_row(s.t, w + o * rb, tmp, s.n_in);
            double m = 0;
            for (int64_t i = 0; i < s.n_in; i++) m += fabs((double)tmp[i] * xf[i]);
            mag[t * s.n_out + o] = m;
        }
    }
    /* gather4 directly: 4 rows picked at random (repeats allowed), prefetch targets elsewhere */
    const hr_gather4_fn g4 = hr_kernels_ext_of(k)->gather4[s.t];
    for (int rep = 0; g4 && rep < 8; rep++) {
        const void *rows[4], *nx[4];
        int32_t o[4];
        float y4[4];
        for (int q = 0; q < 4; q++) {
            o[q] = (int32_t)(hr_rng_next(r) % (uint64_t)s.n_out);
            rows[q] = w + o[q] * rb;
            nx[q] = w + (hr_rng_next(r) % (uint64_t)s.n_out) * rb;
        }
        const int64_t t = rep % MAX_TOK;
        k->act_prep[s.t](X + t * s.n_in, xq, s.n_in);
        g4(s.n_in, rows, rep & 1 ? rows : nx, xq, y4);
        int bad = 0;
        for (int q = 0; q < 4; q++) bad += memcmp(&y4[q], &dots[t * s.n_out + o[q]], sizeof y4[q]) != 0;
        CHECKF(bad == 0, "%s %s n_in=%lld: gather4 differs from vec_dot in %d rows", k->name, hr_type_name(s.t),
               (long long)s.n_in, bad);
    }
    int64_t nl = make_lists(s.n_out, r, buf, L);
    hr_mat W = {.type = s.t, .n_in = s.n_in, .n_out = s.n_out, .row_bytes = rb, .data = w};
    const int64_t toks[] = {1, 2, 5};
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c, cs;
        hr_err e = {{0}};
        CHECK(hr_cpu_init(&c, nth, &e) == 0);
        CHECK(hr_cpu_init(&cs, nth, &e) == 0);
        c.k = k;
        cs.k = hr_kernels_scalar();
        for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++) {
            int64_t nt = toks[ti];
            CHECK(hr_matmul(&c, &W, X, nt, Yf, &e) == 0);
            for (int64_t l = 0; l < nl; l++) {
                const idx_list *li = &L[l];
                for (int64_t q = 0; q < nt * li->n; q++) Yg[q] = NAN;
                CHECKF(hr_gather_matmul(&c, &W, X, nt, li->idx, li->n, Yg, &e) == 0, "%s", e.msg);
                CHECK(hr_gather_matmul(&cs, &W, X, nt, li->idx, li->n, Ys, &e) == 0);
                int bad = 0, bad_def = 0, bad_tol = 0;
                for (int64_t t = 0; t < nt; t++)
                    for (int64_t i = 0; i < li->n; i++) {
                        float g = Yg[t * li->n + i];
                        int32_t o = li->idx[i];
                        bad += memcmp(&g, &Yf[t * s.n_out + o], sizeof g) != 0;
                        bad_def += memcmp(&g, &dots[t * s.n_out + o], sizeof g) != 0;
                        /* each table is within test_kernels.c's float accumulation bound
                         * of the exact product, so the two within twice that */
                        double tl = 4.0 * ((double)s.n_in / 8 + 32) * 0x1p-24 * mag[t * s.n_out + o] + 1e-30;
                        bad_tol += !(fabs((double)g - Ys[t * li->n + i]) <= tl);
                    }
                CHECKF(bad == 0, "%s %s n_in=%lld tok=%lld thr=%d %s: %d rows differ from hr_matmul",
                       k->name, hr_type_name(s.t), (long long)s.n_in, (long long)nt, nth, li->what, bad);
                CHECKF(bad_def == 0, "%s %s tok=%lld thr=%d %s: %d rows differ from vec_dot", k->name,
                       hr_type_name(s.t), (long long)nt, nth, li->what, bad_def);
                CHECKF(bad_tol == 0, "%s %s tok=%lld thr=%d %s: %d rows far from the scalar table", k->name,
                       hr_type_name(s.t), (long long)nt, nth, li->what, bad_tol);
            }
        }
        hr_cpu_free(&c);
        hr_cpu_free(&cs);
    }
    free(w); free(tmp); free(X); free(Yf); free(Yg); free(Ys); free(dots); free(mag); free(xq); free(xf);
}

static void bad_input(void) {
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 2, &e) == 0);
    float w[4 * 32] = {0}, x[32] = {0}, y[8];
    hr_mat W = {.type = HR_F32, .n_in = 32, .n_out = 4, .row_bytes = 128, .data = w};
    int32_t ok[] = {0, 3}, neg[] = {0, -1}, big[] = {4, 0};
    CHECK(hr_gather_matmul(&c, &W, x, 1, ok, 2, y, &e) == 0);
    e.msg[0] = 0;
    CHECK(hr_gather_matmul(&c, &W, x, 1, neg, 2, y, &e) < 0 && e.msg[0]);
    CHECK(hr_gather_matmul(&c, &W, x, 1, big, 2, y, &e) < 0);
    CHECK(hr_gather_matmul(&c, &W, x, 0, ok, 2, y, &e) < 0);
    CHECK(hr_gather_matmul(&c, &W, x, 1, NULL, 2, y, &e) < 0);
    CHECK(hr_gather_matmul(&c, NULL, x, 1, ok, 2, y, &e) < 0);
    hr_mat bad = W;
    bad.row_bytes = 100;
    CHECK(hr_gather_matmul(&c, &bad, x, 1, ok, 2, y, &e) < 0);
    bad = W;
    bad.type = HR_I32;
    CHECK(hr_gather_matmul(&c, &bad, x, 1, ok, 2, y, &e) < 0);
    hr_cpu_free(&c);
}

int main(void) {
    hr_rng r = {11};
    const shape shapes[] = {
        {HR_F32, 33, 37}, {HR_F32, 256, 16}, {HR_F16, 47, 29}, {HR_F16, 160, 41}, {HR_BF16, 47, 9},
        {HR_BF16, 128, 31}, {HR_Q8_0, 96, 37}, {HR_Q8_0, 512, 18}, {HR_Q4_0, 32, 7}, {HR_Q4_0, 544, 19},
        {HR_Q4_1, 32, 7}, {HR_Q4_1, 544, 19}, {HR_Q5_0, 96, 37}, {HR_Q5_0, 544, 19}, {HR_Q5_1, 32, 7},
        {HR_Q5_1, 544, 19}, {HR_IQ4_NL, 96, 37}, {HR_IQ4_NL, 544, 19}, {HR_MXFP4, 32, 7}, {HR_MXFP4, 544, 19},
        {HR_Q2_K, 256, 37}, {HR_Q2_K, 1280, 19}, {HR_Q3_K, 256, 37}, {HR_Q3_K, 1280, 19}, {HR_Q4_K, 256, 37},
        {HR_Q4_K, 1280, 19}, {HR_Q5_K, 256, 37}, {HR_Q5_K, 1280, 19}, {HR_Q6_K, 256, 37}, {HR_Q6_K, 1280, 19},
        {HR_IQ4_XS, 256, 37}, {HR_IQ4_XS, 1280, 19}, {HR_Q4_0, 9728, 21}, {HR_Q8_0, 9728, 9}, {HR_F16, 4104, 23},
    };
    const hr_kernels *tabs[] = {hr_kernels_scalar(), hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx(), hr_kernels_neon()};
    for (size_t ti = 0; ti < sizeof tabs / sizeof tabs[0]; ti++) {
        if (!tabs[ti]) continue;
        char covered[512] = "", missing[512] = "";
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const uint32_t t = shapes[i].t;
            const int have = tabs[ti]->vec_dot[t] && tabs[ti]->act_prep[t];
            /* each type once in the lists, at its first shape */
            int seen = 0;
            for (size_t q = 0; q < i; q++) seen |= shapes[q].t == t;
            if (!seen) {
                char *list = have ? covered : missing;
                strncat(list, " ", sizeof covered - strlen(list) - 1);
                strncat(list, hr_type_name(t), sizeof covered - strlen(list) - 1);
            }
            if (have) run_case(shapes[i], tabs[ti], &r);
        }
        fprintf(stderr, "%s: covered%s; no vec_dot yet:%s\n", tabs[ti]->name, covered, missing[0] ? missing : " none");
    }
    bad_input();
    return TEST_END();
}
