/* Greedy, top-k=1, repetition penalty, seeds, parameter checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sampler/sampler.h"
#include "testutil.h"

static hr_sampler *mk(float temp, int top_k, float top_p, float min_p, float pen, int last_n, uint64_t seed,
                      int n) {
    hr_sampler_params p = hr_sampler_defaults();
    p.temp = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.repeat_penalty = pen;
    p.repeat_last_n = last_n;
    p.seed = seed;
    hr_err e = {{0}};
    hr_sampler *s = hr_sampler_new(&p, n, &e);
    CHECKF(s != NULL, "new: %s", e.msg);
    return s;
}

static void test_greedy(void) {
    hr_rng r = {1};
    const int n = 32000;
    float *x = malloc(n * sizeof *x), *copy = malloc(n * sizeof *copy);
    hr_sampler *s = mk(0.0f, 40, 0.95f, 0.05f, 1.0f, 64, 7, n);
    hr_sampler *k1[3] = {mk(0.3f, 1, 0.95f, 0.05f, 1.0f, 64, 1, n), mk(1.0f, 1, 1.0f, 0.0f, 1.0f, 64, 2, n),
                         mk(5.0f, 1, 0.5f, 0.0f, 1.0f, 64, 3, n)};
    for (int trial = 0; trial < 50; trial++) {
        for (int i = 0; i < n; i++) x[i] = hr_rng_normal(&r) * 4.0f;
        if (trial % 2) { /* plant a tie at the maximum: the lowest id must win */
            int a = (int)(hr_rng_next(&r) % n), b = (int)(hr_rng_next(&r) % n);
            x[a] = x[b] = 100.0f;
        }
        if (trial % 5 == 0) x[hr_rng_next(&r) % n] = NAN; /* never chosen */
        memcpy(copy, x, n * sizeof *x);
        int want = -1;
        for (int i = 0; i < n; i++)
            if (!isnan(x[i]) && (want < 0 || x[i] > x[want])) want = i;
        int got = hr_sampler_sample(s, x);
        CHECKF(got == want, "greedy trial %d: got %d want %d", trial, got, want);
        for (int j = 0; j < 3; j++) {
            int g = hr_sampler_sample(k1[j], x);
            CHECKF(g == want, "top_k=1 sampler %d trial %d: got %d want %d", j, trial, g, want);
        }
        CHECK(memcmp(copy, x, n * sizeof *x) == 0); /* logits untouched */
    }
    /* +inf wins when sampling too (no NaN weights); all -inf falls back to the first id */
    float inf_l[4] = {1.0f, INFINITY, 3.0f, -INFINITY}, ninf[3] = {-INFINITY, -INFINITY, -INFINITY};
    hr_sampler *si = mk(1.0f, 0, 1.0f, 0.0f, 1.0f, 0, 9, 4), *sn = mk(1.0f, 0, 0.9f, 0.1f, 1.0f, 0, 9, 3);
    for (int i = 0; i < 20; i++) CHECK(hr_sampler_sample(si, inf_l) == 1);
    CHECK(hr_sampler_sample(sn, ninf) == 0);
    hr_sampler_free(si);
    hr_sampler_free(sn);
    float all_eq[5] = {2, 2, 2, 2, 2};
    hr_sampler *s5 = mk(0.0f, 0, 1.0f, 0.0f, 1.0f, 0, 0, 5);
    CHECK(hr_sampler_sample(s5, all_eq) == 0);
    hr_sampler_free(s5);
    hr_sampler_free(s);
    for (int j = 0; j < 3; j++) hr_sampler_free(k1[j]);
    free(x);
    free(copy);
}

static void test_penalty(void) {
    float x[10] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 2.0f, 0.6f, 1.5f, 0.7f, 0.0f};
    hr_sampler *s = mk(0.0f, 40, 0.95f, 0.05f, 1.5f, 3, 0, 10);
    CHECK(hr_sampler_sample(s, x) == 5);
    hr_sampler_accept(s, 5);
    CHECK(hr_sampler_sample(s, x) == 7); /* 2.0 / 1.5 = 1.33 < 1.5 */
    /* three other tokens push 5 out of a window of 3 */
    hr_sampler_accept(s, 1);
    hr_sampler_accept(s, 2);
    CHECK(hr_sampler_sample(s, x) == 7);
    hr_sampler_accept(s, 3);
    CHECK(hr_sampler_sample(s, x) == 5);
    hr_sampler_free(s);

    /* a token repeated in the window is penalised once: 2.0/1.5 = 1.33 > 1.2 (twice: 0.89) */
    float y[10] = {0, 0, 0, 0, 0, 2.0f, 0, 1.2f, 0, 0};
    s = mk(0.0f, 0, 1.0f, 0.0f, 1.5f, 64, 0, 10);
    hr_sampler_accept(s, 5);
    hr_sampler_accept(s, 5);
    CHECK(hr_sampler_sample(s, y) == 5);
    hr_sampler_free(s);

    /* negative logits are multiplied: -1.0 * 1.3 = -1.3 < -1.2 */
    float z[5] = {-5.0f, -3.0f, -2.0f, -1.0f, -1.2f};
    s = mk(0.0f, 0, 1.0f, 0.0f, 1.3f, 64, 0, 5);
    CHECK(hr_sampler_sample(s, z) == 3);
    hr_sampler_accept(s, 3);
    CHECK(hr_sampler_sample(s, z) == 4);
    hr_sampler_accept(s, -1); /* out of range: ignored */
    hr_sampler_accept(s, 5);
    CHECK(hr_sampler_sample(s, z) == 4);
    hr_sampler_free(s);

    /* repeat_last_n 0 disables the penalty */
    s = mk(0.0f, 0, 1.0f, 0.0f, 1.5f, 0, 0, 10);
    hr_sampler_accept(s, 5);
    CHECK(hr_sampler_sample(s, x) == 5);
    hr_sampler_free(s);
}

static void draw_seq(uint64_t seed, int *out, int len, const float *x, int n) {
    hr_sampler *s = mk(1.0f, 0, 1.0f, 0.0f, 1.0f, 64, seed, n);
    for (int i = 0; i < len; i++) out[i] = hr_sampler_sample(s, x);
    hr_sampler_free(s);
}

static void test_seeds(void) {
    enum { N = 100, L = 200 };
    float x[N];
    hr_rng r = {3};
    for (int i = 0; i < N; i++) x[i] = hr_rng_normal(&r) * 0.5f;
    int a[L], b[L], c[L];
    draw_seq(1234, a, L, x, N);
    draw_seq(1234, b, L, x, N);
    draw_seq(1235, c, L, x, N);
    CHECK(memcmp(a, b, sizeof a) == 0);
    int same = 0;
    for (int i = 0; i < L; i++) same += a[i] == c[i];
    CHECKF(same < L / 4, "different seeds agree on %d of %d draws", same, L);
    int distinct = 0;
    for (int i = 1; i < L; i++) distinct += a[i] != a[0];
    CHECK(distinct > 0);
}

static void test_bad_params(void) {
    hr_sampler_params p = hr_sampler_defaults();
    hr_err e = {{0}};
    CHECK(hr_sampler_new(&p, 0, &e) == NULL && e.msg[0]);
    p.repeat_penalty = 0.0f;
    e.msg[0] = 0;
    CHECK(hr_sampler_new(&p, 10, &e) == NULL && e.msg[0]);
    p = hr_sampler_defaults();
    p.repeat_last_n = -1;
    e.msg[0] = 0;
    CHECK(hr_sampler_new(&p, 10, &e) == NULL && e.msg[0]);
    p = hr_sampler_defaults();
    p.temp = NAN;
    e.msg[0] = 0;
    CHECK(hr_sampler_new(&p, 10, &e) == NULL && e.msg[0]);
    CHECK(hr_sampler_new(NULL, 10, NULL) == NULL);
    /* the one range: each field at its bounds and just past them */
    struct { float temp, top_p, min_p, pen; int32_t top_k, last_n; const char *field; } cases[] = {
        {0, 1, 0, 1, 0, 0, NULL},          {100, 0, 1, 100, 1 << 24, 1 << 20, NULL},
        {-0.5f, 1, 0, 1, 0, 0, "temp:"},   {INFINITY, 1, 0, 1, 0, 0, "temp:"},
        {1, 1.5f, 0, 1, 0, 0, "top_p:"},   {1, NAN, 0, 1, 0, 0, "top_p:"},
        {1, 1, -0.1f, 1, 0, 0, "min_p:"},  {1, 1, 2, 1, 0, 0, "min_p:"},
        {1, 1, 0, 0, 0, 0, "repeat_penalty:"}, {1, 1, 0, -1, 0, 0, "repeat_penalty:"},
        {1, 1, 0, 101, 0, 0, "repeat_penalty:"}, {1, 1, 0, 1, -1, 0, "top_k:"},
        {1, 1, 0, 1, 0, (1 << 20) + 1, "repeat_last_n:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        p = hr_sampler_defaults();
        p.temp = cases[i].temp, p.top_p = cases[i].top_p, p.min_p = cases[i].min_p, p.repeat_penalty = cases[i].pen;
        p.top_k = cases[i].top_k, p.repeat_last_n = cases[i].last_n;
        e.msg[0] = 0;
        int r = hr_sampler_params_check(&p, &e);
        if (!cases[i].field) CHECKF(r == 0, "case %zu refused: %s", i, e.msg);
        else CHECKF(r < 0 && !strncmp(e.msg, cases[i].field, strlen(cases[i].field)), "case %zu: \"%s\"", i, e.msg);
    }
    CHECK(hr_sampler_sample(NULL, NULL) == -1);
    hr_sampler_free(NULL);
}

int main(void) {
    test_greedy();
    test_penalty();
    test_seeds();
    test_bad_params();
    return TEST_END();
}
