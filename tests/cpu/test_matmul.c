/* hr_matmul against a double-precision product of the dequantized weights and the
 * prepared activations, for several batch sizes and thread counts; results repeat
 * exactly, and (by design) do not depend on thread count or batch position; the paired
 * product, the per-chunk epilogue and a group of products in one run against plain calls. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/matmul.h"
#include "kernel_rows.h"
#include "testutil.h"

typedef struct {
    uint32_t t;
    int64_t n_in, n_out;
} shape;

static void run_case(shape s, hr_rng *r) {
    const int64_t toks[] = {1, 2, 3, 5, 17};
    const int64_t max_tok = 17;
    size_t rb = hr_row_bytes(s.t, (uint64_t)s.n_in);
    char *w = malloc(rb * s.n_out);
    float *X = malloc(max_tok * s.n_in * sizeof *X);
    double *ref = malloc(max_tok * s.n_out * sizeof *ref), *abs_ref = malloc(max_tok * s.n_out * sizeof *abs_ref);
    float *Y = malloc(max_tok * s.n_out * sizeof *Y), *Y1 = malloc(max_tok * s.n_out * sizeof *Y1);
    float *Yt1 = malloc(max_tok * s.n_out * sizeof *Yt1);
    void *xq = malloc(hr_act_bytes(s.t, s.n_in) + 64);
    for (int64_t o = 0; o < s.n_out; o++) kt_weight_row(r, s.t, w + o * rb, s.n_in);
    for (int64_t i = 0; i < max_tok * s.n_in; i++) X[i] = hr_rng_normal(r);
    /* reference from the activations as prepared (the scalar prep is the tested twin) */
    for (int64_t t = 0; t < max_tok; t++) {
        hr_kernels_scalar()->act_prep[s.t](X + t * s.n_in, xq, s.n_in);
        for (int64_t o = 0; o < s.n_out; o++)
            ref[t * s.n_out + o] = kt_ref_dot(s.t, w + o * rb, xq, s.n_in, &abs_ref[t * s.n_out + o]);
    }
    hr_mat W = {.type = s.t, .n_in = s.n_in, .n_out = s.n_out, .row_bytes = rb, .data = w};
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c;
        hr_err e = {{0}};
        CHECK(hr_cpu_init(&c, nth, &e) == 0);
        for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
            int64_t nt = toks[k];
            CHECKF(hr_matmul(&c, &W, X, nt, Y, &e) == 0, "%s: %s", hr_type_name(s.t), e.msg);
            /* float accumulation bound, as in test_kernels.c */
            int bad = 0;
            for (int64_t i = 0; i < nt * s.n_out; i++) {
                double tl = 2.0 * ((double)s.n_in / 8 + 32) * 0x1p-24 * abs_ref[i] + 1e-30;
                if (!(fabs(Y[i] - ref[i]) <= tl) && bad++ < 3)
                    fprintf(stderr, "%s n_in=%lld tok=%lld thr=%d i=%lld: %.9g vs %.9g\n", hr_type_name(s.t),
                            (long long)s.n_in, (long long)nt, nth, (long long)i, Y[i], ref[i]);
            }
            CHECK(bad == 0);
            CHECK(hr_matmul(&c, &W, X, nt, Y1, &e) == 0);
            CHECKF(memcmp(Y, Y1, nt * s.n_out * sizeof *Y) == 0, "%s: repeat differs", hr_type_name(s.t));
            if (nth == 1 && nt == max_tok) memcpy(Yt1, Y, nt * s.n_out * sizeof *Y);
            if (nt == max_tok) CHECKF(memcmp(Y, Yt1, nt * s.n_out * sizeof *Y) == 0, "%s: thread count changed results", hr_type_name(s.t));
        }
        /* one token at a time gives the batch's values */
        for (int64_t t = 0; t < max_tok; t++) {
            CHECK(hr_matmul(&c, &W, X + t * s.n_in, 1, Y1 + t * s.n_out, &e) == 0);
        }
        CHECK(hr_matmul(&c, &W, X, max_tok, Y, &e) == 0);
        CHECKF(memcmp(Y, Y1, max_tok * s.n_out * sizeof *Y) == 0, "%s: batch != single tokens", hr_type_name(s.t));
        hr_cpu_free(&c);
    }
    /* bad input is an error, not a crash */
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 1, &e) == 0);
    hr_mat bad = W;
    bad.row_bytes += 1;
    CHECK(hr_matmul(&c, &bad, X, 1, Y, &e) < 0 && e.msg[0]);
    bad = W;
    bad.type = HR_I32;
    CHECK(hr_matmul(&c, &bad, X, 1, Y, &e) < 0);
    CHECK(hr_matmul(&c, &W, X, 0, Y, &e) < 0);
    hr_cpu_free(&c);
    free(w); free(X); free(ref); free(abs_ref); free(Y); free(Y1); free(Yt1); free(xq);
}

/* What the epilogue saw: how often each row was handed to it, and the rows' values then. */
typedef struct {
    const float *Y0, *Y1;
    float *seen0, *seen1;
    int *count;
    int64_t n_out, n_tok;
} epi_log;

static void log_rows(void *arg, int64_t r0, int64_t r1) {
    const epi_log *l = arg;
    for (int64_t r = r0; r < r1; r++) l->count[r]++;
    for (int64_t t = 0; t < l->n_tok; t++)
        for (int64_t r = r0; r < r1; r++) {
            l->seen0[t * l->n_out + r] = l->Y0[t * l->n_out + r];
            if (l->Y1) l->seen1[t * l->n_out + r] = l->Y1[t * l->n_out + r];
        }
}

/* hr_matmul_pair and hr_matmul_ep: the same values as two hr_matmul calls, and the epilogue
 * gets every row exactly once, after the row is final, at any thread count and batch. */
static void test_pair_epilogue(shape s, hr_rng *r) {
    enum { NT = 5 };
    const size_t rb = hr_row_bytes(s.t, (uint64_t)s.n_in), ny = NT * (size_t)s.n_out;
    char *w0 = malloc(rb * s.n_out), *w1 = malloc(rb * s.n_out);
    float *X = malloc(sizeof(float) * NT * s.n_in), *buf = malloc(sizeof(float) * ny * 6);
    float *A0 = buf, *A1 = buf + ny, *Y0 = buf + 2 * ny, *Y1 = buf + 3 * ny, *S0 = buf + 4 * ny, *S1 = buf + 5 * ny;
    int *count = malloc(sizeof(int) * s.n_out);
    for (int64_t o = 0; o < s.n_out; o++) kt_weight_row(r, s.t, w0 + o * rb, s.n_in), kt_weight_row(r, s.t, w1 + o * rb, s.n_in);
    for (int64_t i = 0; i < NT * s.n_in; i++) X[i] = hr_rng_normal(r);
    hr_mat W0 = {.type = s.t, .n_in = s.n_in, .n_out = s.n_out, .row_bytes = rb, .data = w0}, W1 = W0;
    W1.data = w1;
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c;
        hr_err e = {{0}};
        CHECK(hr_cpu_init(&c, nth, &e) == 0);
        for (int64_t nt = 1; nt <= NT; nt += NT - 1) {
            const size_t bytes = sizeof(float) * (size_t)(nt * s.n_out);
            CHECK(hr_matmul(&c, &W0, X, nt, A0, &e) == 0 && hr_matmul(&c, &W1, X, nt, A1, &e) == 0);
            for (int pair = 0; pair < 2; pair++) {
                epi_log l = {Y0, pair ? Y1 : NULL, S0, S1, count, s.n_out, nt};
                const hr_mm_epi ep = {log_rows, &l};
                memset(count, 0, sizeof(int) * s.n_out);
                memset(S0, 0xff, bytes), memset(S1, 0xff, bytes);
                CHECK((pair ? hr_matmul_pair(&c, &W0, &W1, X, nt, Y0, Y1, &ep, &e) : hr_matmul_ep(&c, &W0, X, nt, Y0, &ep, &e)) == 0);
                CHECKF(memcmp(Y0, A0, bytes) == 0, "%s pair %d nth %d: first product differs", hr_type_name(s.t), pair, nth);
                CHECKF(memcmp(S0, Y0, bytes) == 0, "%s pair %d nth %d: epilogue saw unfinished rows", hr_type_name(s.t), pair, nth);
                if (pair) CHECKF(memcmp(Y1, A1, bytes) == 0 && memcmp(S1, Y1, bytes) == 0, "%s nth %d: second product", hr_type_name(s.t), nth);
                int once = 1;
                for (int64_t o = 0; o < s.n_out; o++) once &= count[o] == 1;
                CHECKF(once, "%s pair %d nth %d: a row not handed to the epilogue exactly once", hr_type_name(s.t), pair, nth);
            }
        }
        hr_mat other = W1;
        other.n_out--;
        CHECK(hr_matmul_pair(&c, &W0, &other, X, 1, Y0, Y1, NULL, &e) < 0 && e.msg[0]);
        hr_cpu_free(&c);
    }
    free(w0), free(w1), free(X), free(buf), free(count);
}

/* hr_matmul_group: items of several types, batch sizes (decode, tiles, 16-token panels) and
 * shapes, some pairs, some with epilogues, in one call: each item's values those of its own
 * hr_matmul (pair) call bit for bit, its epilogue given each of its rows once after they are
 * final, at 1-3 threads; a bad item is an error. */
enum { G_ITEMS = 7, G_MAXT = 33 };
static void test_group(hr_rng *r) {
    const uint32_t types[G_ITEMS] = {HR_Q4_K, HR_Q4_K, HR_Q4_0, HR_F16, HR_Q8_0, HR_Q4_K, HR_F32};
    const int64_t n_in[G_ITEMS] = {256, 256, 96, 64, 512, 768, 33}, n_out[G_ITEMS] = {70, 70, 37, 300, 18, 16, 9};
    const int64_t toks[G_ITEMS] = {4, 1, 17, 2, 33, 16, 3};
    const int pair[G_ITEMS] = {1, 1, 0, 1, 0, 0, 1}, epi[G_ITEMS] = {1, 0, 1, 1, 0, 1, 1};
    hr_mat W[G_ITEMS][2];
    float *X[G_ITEMS], *Y[G_ITEMS][2], *R[G_ITEMS][2], *S[G_ITEMS][2];
    int *count[G_ITEMS];
    epi_log logs[G_ITEMS];
    hr_mm_epi eps[G_ITEMS];
    hr_mm_item items[G_ITEMS];
    for (int i = 0; i < G_ITEMS; i++) {
        const size_t rb = hr_row_bytes(types[i], (uint64_t)n_in[i]), ny = (size_t)(toks[i] * n_out[i]);
        for (int m = 0; m < 2; m++) {
            char *w = malloc(rb * (size_t)n_out[i]);
            for (int64_t o = 0; o < n_out[i]; o++) kt_weight_row(r, types[i], w + o * rb, n_in[i]);
            W[i][m] = (hr_mat){.type = types[i], .n_in = n_in[i], .n_out = n_out[i], .row_bytes = rb, .data = w};
            Y[i][m] = malloc(sizeof(float) * ny), R[i][m] = malloc(sizeof(float) * ny), S[i][m] = malloc(sizeof(float) * ny);
        }
        X[i] = malloc(sizeof(float) * (size_t)(toks[i] * n_in[i]));
        for (int64_t k = 0; k < toks[i] * n_in[i]; k++) X[i][k] = hr_rng_normal(r);
        count[i] = malloc(sizeof(int) * (size_t)n_out[i]);
        logs[i] = (epi_log){Y[i][0], pair[i] ? Y[i][1] : NULL, S[i][0], S[i][1], count[i], n_out[i], toks[i]};
        eps[i] = (hr_mm_epi){log_rows, &logs[i]};
        items[i] = (hr_mm_item){.W = &W[i][0], .W1 = pair[i] ? &W[i][1] : NULL, .X = X[i], .n_tok = toks[i],
                                .Y = Y[i][0], .Y1 = pair[i] ? Y[i][1] : NULL, .ep = epi[i] ? &eps[i] : NULL};
    }
    for (int nth = 1; nth <= 3; nth++) {
        hr_cpu c;
        hr_err e = {{0}};
        CHECK(hr_cpu_init(&c, nth, &e) == 0);
        for (int i = 0; i < G_ITEMS; i++) {
            CHECK(hr_matmul(&c, &W[i][0], X[i], toks[i], R[i][0], &e) == 0);
            CHECK(hr_matmul(&c, &W[i][1], X[i], toks[i], R[i][1], &e) == 0);
            memset(count[i], 0, sizeof(int) * (size_t)n_out[i]);
            memset(S[i][0], 0xff, sizeof(float) * (size_t)(toks[i] * n_out[i]));
            memset(S[i][1], 0xff, sizeof(float) * (size_t)(toks[i] * n_out[i]));
        }
        CHECKF(hr_matmul_group(&c, items, G_ITEMS, &e) == 0, "%s", e.msg);
        for (int i = 0; i < G_ITEMS; i++) {
            const size_t bytes = sizeof(float) * (size_t)(toks[i] * n_out[i]);
            CHECKF(memcmp(Y[i][0], R[i][0], bytes) == 0, "group item %d (%s, %lld tokens) nth %d: differs from hr_matmul", i,
                   hr_type_name(types[i]), (long long)toks[i], nth);
            if (pair[i]) CHECKF(memcmp(Y[i][1], R[i][1], bytes) == 0, "group item %d nth %d: second product differs", i, nth);
            if (!epi[i]) continue;
            int once = 1;
            for (int64_t o = 0; o < n_out[i]; o++) once &= count[i][o] == 1;
            CHECKF(once, "group item %d nth %d: a row not handed to its epilogue exactly once", i, nth);
            CHECKF(memcmp(S[i][0], Y[i][0], bytes) == 0, "group item %d nth %d: epilogue saw unfinished rows", i, nth);
        }
        CHECK(hr_matmul_group(&c, items, 0, &e) == 0);
        hr_mm_item bad[2] = {items[0], items[2]};
        hr_mat short_w = W[2][0];
        short_w.row_bytes += 2;
        bad[1].W = &short_w;
        e.msg[0] = 0;
        CHECK(hr_matmul_group(&c, bad, 2, &e) < 0 && e.msg[0]);
        hr_cpu_free(&c);
    }
    for (int i = 0; i < G_ITEMS; i++) {
        for (int m = 0; m < 2; m++) free((void *)W[i][m].data), free(Y[i][m]), free(R[i][m]), free(S[i][m]);
        free(X[i]), free(count[i]);
    }
}

/* More items than hr_matmul_group keeps on its stack: each one still its own hr_matmul's. */
static void test_group_many(hr_rng *r) {
    enum { N = 21, NI = 96, NO = 37, MT = 3 };
    const size_t rb = hr_row_bytes(HR_Q4_0, NI);
    char *w = malloc(rb * NO * N);
    float *X = malloc(sizeof(float) * N * MT * NI), *Y = malloc(sizeof(float) * N * MT * NO), *R = malloc(sizeof(float) * MT * NO);
    hr_mat W[N];
    hr_mm_item it[N];
    for (int i = 0; i < N * NO; i++) kt_weight_row(r, HR_Q4_0, w + (size_t)i * rb, NI);
    for (int i = 0; i < N * MT * NI; i++) X[i] = hr_rng_normal(r);
    for (int i = 0; i < N; i++) {
        W[i] = (hr_mat){.type = HR_Q4_0, .n_in = NI, .n_out = NO, .row_bytes = rb, .data = w + (size_t)i * NO * rb};
        it[i] = (hr_mm_item){.W = &W[i], .X = X + (size_t)i * MT * NI, .n_tok = 1 + i % MT, .Y = Y + (size_t)i * MT * NO};
    }
    hr_cpu c;
    hr_err e = {{0}};
    CHECK(hr_cpu_init(&c, 2, &e) == 0);
    CHECKF(hr_matmul_group(&c, it, N, &e) == 0, "%s", e.msg);
    for (int i = 0; i < N; i++) {
        CHECK(hr_matmul(&c, &W[i], it[i].X, it[i].n_tok, R, &e) == 0);
        CHECKF(memcmp(R, it[i].Y, sizeof(float) * (size_t)(it[i].n_tok * NO)) == 0, "group of %d: item %d differs", N, i);
    }
    hr_cpu_free(&c);
    free(w), free(X), free(Y), free(R);
}

int main(void) {
    hr_rng r = {5};
    test_group(&r);
    test_group_many(&r);
    test_pair_epilogue((shape){HR_Q4_0, 96, 37}, &r);
    test_pair_epilogue((shape){HR_Q4_K, 256, 70}, &r);
    test_pair_epilogue((shape){HR_F16, 64, 300}, &r);
    const shape shapes[] = {
        {HR_F32, 33, 37}, {HR_F32, 256, 16}, {HR_F16, 33, 37}, {HR_F16, 160, 20}, {HR_BF16, 47, 9},
        {HR_BF16, 128, 31}, {HR_Q8_0, 96, 37}, {HR_Q8_0, 512, 18}, {HR_Q4_0, 96, 37}, {HR_Q4_0, 544, 19},
        {HR_Q4_1, 96, 37}, {HR_Q4_1, 544, 19}, {HR_Q5_0, 32, 21}, {HR_Q5_0, 288, 22}, {HR_Q5_1, 160, 37},
        {HR_IQ4_NL, 96, 37}, {HR_IQ4_NL, 544, 18}, {HR_MXFP4, 64, 29}, {HR_MXFP4, 320, 19},
        {HR_Q2_K, 256, 37}, {HR_Q3_K, 512, 19}, {HR_Q4_K, 256, 22}, {HR_Q4_K, 768, 37},
        {HR_Q5_K, 512, 21}, {HR_Q6_K, 256, 37}, {HR_Q6_K, 1280, 18}, {HR_IQ4_XS, 256, 29}, {HR_IQ4_XS, 768, 17},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) run_case(shapes[i], &r);
    /* the other tables through the same paths (an unavailable one falls back to the best) */
    setenv("HEARTH_KERNELS", "scalar", 1);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i += 3) run_case(shapes[i], &r);
    setenv("HEARTH_KERNELS", "avx2", 1);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) run_case(shapes[i], &r);
    /* where AMX is the best table, the AVX-512 one it replaces for Q8_0 and Q4_0; the AVX-VNNI
     * build of the AVX2 table (its quantized kernels differ) */
    setenv("HEARTH_KERNELS", "avx512", 1);
    for (size_t i = 6; i < 10; i++) run_case(shapes[i], &r);
    setenv("HEARTH_KERNELS", "avxvnni", 1);
    for (size_t i = 6; i < sizeof shapes / sizeof shapes[0]; i++) run_case(shapes[i], &r);
    unsetenv("HEARTH_KERNELS");
    return TEST_END();
}
