/* The vectorized tanh against double-precision tanh (ulp error over a sweep of every
 * 61st float up to 10 and beyond, special values, awkward lengths in and out of place), and
 * the table GELU against the computed one bit for bit, the AVX2 twins against the plain C;
 * the F16 conversions' twins against hr_f32_to_f16 on every F16 value, every tie between
 * neighbours, a sweep of all float bit patterns (NaNs of both signs included) and ragged
 * lengths. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/ops.h"
#include "backends/cpu/vmath.h"
#include "formats/types.h"
#include "testutil.h"

static int64_t ordered(float f) {
    int32_t i;
    memcpy(&i, &f, 4);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : i;
}

static int64_t ulp_diff(float a, float b) {
    int64_t d = ordered(a) - ordered(b);
    return d < 0 ? -d : d;
}

/* Max ulp error of tanh over positive floats from bits lo to hi, stepping by step. */
static int64_t sweep(uint32_t lo, uint32_t hi, uint32_t step, float *worst_at) {
    enum { B = 4096 };
    static float x[B], y[B]; /* static: 32 KiB off the stack; the test is single-threaded */
    int64_t worst = 0;
    for (uint64_t u = lo; u <= hi;) {
        int n = 0;
        for (; n < B && u <= hi; n++, u += step) {
            uint32_t b = (uint32_t)u;
            memcpy(&x[n], &b, 4);
            if (n & 1) x[n] = -x[n];
        }
        hr_vtanh_scaled(y, x, n, 1.0f, 1.0f);
        for (int i = 0; i < n; i++) {
            int64_t d = ulp_diff(y[i], (float)tanh((double)x[i]));
            if (d > worst) worst = d, *worst_at = x[i];
        }
    }
    return worst;
}

static void test_accuracy(void) {
    float at = 0;
    const uint32_t ten = 0x41200000u; /* 10.0f */
    int64_t w = sweep(1, ten, 61, &at);
    printf("tanh: max error %lld ulp (at %.9g) over every 61st float in (0, 10]\n", (long long)w, at);
    CHECKF(w <= 4, "max error %lld ulp at %.9g", (long long)w, at);
    w = sweep(ten, 0x7f7fffffu, 104729, &at);
    CHECKF(w == 0, "above 10: %lld ulp at %.9g", (long long)w, at);
}

static void test_special(void) {
    float x[6] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f}, y[6];
    hr_vtanh_scaled(y, x, 6, 1.0f, 3.0f);
    CHECK(isnan(y[0]));
    CHECKF(y[1] == 3.0f && y[2] == -3.0f, "tanh(+-inf) * 3 = %g %g", y[1], y[2]);
    CHECK(y[3] == 0.0f && !signbit(y[3]) && y[4] == 0.0f && signbit(y[4]));
    CHECK(y[5] == 3.0f * 1e-40f);
}

/* Any length, in place or not, gives each element the value it has alone (the vector body
 * and the remainder loop agree) and the scale order cap * tanh(x / cap). */
static void test_lengths(void) {
    hr_rng r = {7};
    const int64_t lens[] = {0, 1, 3, 7, 15, 17, 31, 33, 1001};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t n = lens[li];
        float *x = malloc(sizeof(float) * (size_t)(n + 1)), *y = malloc(sizeof(float) * (size_t)(n + 1));
        for (int64_t i = 0; i < n; i++) x[i] = (hr_rng_uniform(&r) - 0.5f) * 120.0f;
        memcpy(y, x, sizeof(float) * (size_t)n);
        hr_softcap(y, n, 30.0f);
        for (int64_t i = 0; i < n; i++) {
            float one;
            hr_vtanh_scaled(&one, &x[i], 1, 1.0f / 30.0f, 30.0f);
            CHECKF(memcmp(&one, &y[i], 4) == 0, "n %lld i %lld", (long long)n, (long long)i);
            CHECKF(fabs(y[i] - 30.0 * tanh(x[i] / 30.0)) <= 30.0 * 5e-7, "n %lld i %lld", (long long)n, (long long)i);
        }
        free(x);
        free(y);
    }
}

static void test_gelu_table(void) {
    uint16_t *tab = malloc(sizeof(uint16_t) * HR_GELU_TABLE_SIZE);
    hr_gelu_table_init(tab);
    enum { N = 20000 };
    float *g = malloc(sizeof(float) * N), *u = malloc(sizeof(float) * N);
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    hr_rng r = {11};
    for (int i = 0; i < N; i++) {
        g[i] = (hr_rng_uniform(&r) - 0.5f) * 26.0f;
        u[i] = hr_rng_normal(&r);
    }
    g[0] = -10.0f, g[1] = 10.0f, g[2] = -9.999f, g[3] = 9.999f, g[4] = 0.0f, g[5] = 65519.0f, g[6] = -1e-7f;
    const hr_act acts[] = {HR_ACT_GELU, HR_ACT_GEGLU};
    for (int k = 0; k < 2; k++) {
        hr_ffn_act(a, g, u, N, acts[k]);
        hr_ffn_act_tab(b, g, u, N, acts[k], tab);
        CHECKF(memcmp(a, b, sizeof(float) * N) == 0, "gated act %d", (int)acts[k]);
    }
    hr_ffn_act(a, NULL, g, N, HR_ACT_GELU);
    hr_ffn_act_tab(b, NULL, g, N, HR_ACT_GELU, tab);
    CHECK(memcmp(a, b, sizeof(float) * N) == 0);
    hr_ffn_act_tab(b, g, u, N, HR_ACT_SWIGLU, tab); /* other activations ignore the table */
    hr_ffn_act(a, g, u, N, HR_ACT_SWIGLU);
    CHECK(memcmp(a, b, sizeof(float) * N) == 0);
    free(tab), free(g), free(u), free(a), free(b);
}

/* Equal as floats bit for bit, or both NaN (a NaN's payload is not part of the contract). */
static bool same(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }

/* The AVX2 twins against the plain-C functions, element by element, at lengths around the
 * 8-lane blocks, on random values, the edges of GELU's table range, specials and subnormals. */
static void test_avx2_twins(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) {
        printf("no AVX2/F16C: twins not compared\n");
        return;
    }
    uint16_t *tab = malloc(sizeof(uint16_t) * HR_GELU_TABLE_SIZE);
    hr_gelu_table_init(tab);
    enum { N = 4099 };
    float *x = malloc(sizeof(float) * N), *u = malloc(sizeof(float) * N);
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    hr_rng r = {5};
    for (int i = 0; i < N; i++) {
        x[i] = (hr_rng_uniform(&r) - 0.5f) * (i % 3 ? 24.0f : 2.0f);
        u[i] = hr_rng_normal(&r);
    }
    const float sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, -10.0f, 10.0f, -9.9999995f,
                        9.9999995f, -10.000001f, 10.000001f, 0.4999999f, 0.5f, 65519.0f, -65520.0f, 3e-5f, -6e-8f};
    memcpy(x + 40, sp, sizeof sp);
    const int64_t lens[] = {0, 1, 5, 7, 8, 9, 15, 16, 17, 63, 100, N};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li], off = li % 2 ? 40 : 0; /* the specials inside the short ones too */
        const int64_t m = n + off <= N ? n : N - off;
        hr_vtanh_scaled_c(a, x + off, m, 1.0f / 30.0f, 30.0f);
        hr_vtanh_scaled_avx2(b, x + off, m, 1.0f / 30.0f, 30.0f);
        for (int64_t i = 0; i < m; i++) CHECKF(same(a[i], b[i]), "tanh n %lld i %lld: %a vs %a", (long long)m, (long long)i, a[i], b[i]);
        hr_vtanh_scaled_c(a, x + off, m, 1.0f, 1.0f);
        hr_vtanh_scaled_avx2(b, x + off, m, 1.0f, 1.0f);
        for (int64_t i = 0; i < m; i++) CHECKF(same(a[i], b[i]), "tanh n %lld i %lld", (long long)m, (long long)i);
        hr_vswiglu_c(a, x + off, u + off, m);
        hr_vswiglu_avx2(b, x + off, u + off, m);
        for (int64_t i = 0; i < m; i++) CHECKF(same(a[i], b[i]), "swiglu n %lld i %lld: %a vs %a", (long long)m, (long long)i, a[i], b[i]);
        memcpy(b, x + off, sizeof(float) * (size_t)m); /* in place */
        hr_vswiglu_avx2(b, b, u + off, m);
        for (int64_t i = 0; i < m; i++) CHECKF(same(a[i], b[i]), "swiglu in place n %lld i %lld", (long long)m, (long long)i);
        hr_vsilu_abs_c(a, x + off, m);
        hr_vsilu_abs_avx2(b, x + off, m);
        for (int64_t i = 0; i < m; i++) CHECKF(same(a[i], b[i]), "|silu| n %lld i %lld: %a vs %a", (long long)m, (long long)i, a[i], b[i]);
        for (int gated = 0; gated < 2; gated++) {
            hr_vgelu_tab_c(a, gated ? x + off : NULL, gated ? u + off : x + off, m, tab);
            hr_vgelu_tab_avx2(b, gated ? x + off : NULL, gated ? u + off : x + off, m, tab);
            for (int64_t i = 0; i < m; i++)
                CHECKF(same(a[i], b[i]), "gelu gated %d n %lld i %lld: %a vs %a", gated, (long long)m, (long long)i, a[i], b[i]);
        }
    }
    free(tab), free(x), free(u), free(a), free(b);
#endif
}

/* x[i] for i < n: every F16 value, each tie with its upper neighbour, then a stride over all
 * 2^32 float patterns. */
static int64_t f16_inputs(float *x, int64_t cap) {
    int64_t n = 0;
    for (uint32_t h = 0; h < 65536 && n + 2 <= cap; h++) {
        x[n++] = hr_f16_to_f32((uint16_t)h);
        uint32_t u;
        memcpy(&u, &x[n - 1], 4);
        u += 1u << 12; /* half an F16 step for normal values */
        memcpy(&x[n++], &u, 4);
    }
    for (uint64_t u = 0; u < (1ull << 32) && n < cap; u += 4093) {
        const uint32_t v = (uint32_t)u;
        memcpy(&x[n++], &v, 4);
    }
    return n;
}

static void test_f16_twins(void) {
    enum { CAP = 131072 + 1049600 };
    float *x = malloc(sizeof(float) * CAP), *a = malloc(sizeof(float) * CAP);
    uint16_t *h = malloc(sizeof(uint16_t) * CAP);
    CHECK(x && a && h);
    if (!x || !a || !h) return;
    const int64_t n = f16_inputs(x, CAP);
    hr_vto_f16(h, x, n);
    memcpy(a, x, sizeof(float) * (size_t)n);
    hr_vround_f16(a, n);
    int64_t bad = 0, bad_round = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint16_t want = hr_f32_to_f16(x[i]);
        const float wr = hr_f16_to_f32(want);
        if (h[i] != want && bad++ < 5) printf("to_f16 %a: %04x, want %04x\n", x[i], h[i], want);
        if (memcmp(&a[i], &wr, 4) != 0 && bad_round++ < 5) printf("round_f16 %a: %a, want %a\n", x[i], a[i], wr);
    }
    CHECKF(bad == 0, "hr_vto_f16: %lld of %lld differ from hr_f32_to_f16", (long long)bad, (long long)n);
    CHECKF(bad_round == 0, "hr_vround_f16: %lld of %lld differ", (long long)bad_round, (long long)n);
    const int64_t lens[] = {1, 7, 8, 9, 17, 100};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) { /* tails, against the plain C */
        uint16_t hc[100], hv[100];
        float rc[100], rv[100];
        const float *src = x + 65530 * 2 + li; /* Inf, NaN patterns and the sweep's start */
        hr_vto_f16_c(hc, src, lens[li]);
        hr_vto_f16(hv, src, lens[li]);
        memcpy(rc, src, sizeof(float) * (size_t)lens[li]), memcpy(rv, rc, sizeof rc);
        hr_vround_f16_c(rc, lens[li]);
        hr_vround_f16(rv, lens[li]);
        CHECKF(memcmp(hc, hv, sizeof(uint16_t) * (size_t)lens[li]) == 0, "to_f16 tail n %lld", (long long)lens[li]);
        CHECKF(memcmp(rc, rv, sizeof(float) * (size_t)lens[li]) == 0, "round_f16 tail n %lld", (long long)lens[li]);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
        hr_vto_f16_avx2(h, x, n);
        int64_t b2 = 0;
        for (int64_t i = 0; i < n; i++) b2 += h[i] != hr_f32_to_f16(x[i]);
        CHECKF(b2 == 0, "hr_vto_f16_avx2: %lld differ", (long long)b2);
    }
#endif
    free(x), free(a), free(h);
}

/* The softmax's exponentials: within 3 ulp of expf over every 97th float in (-87, 0] (and 0
 * below -87, NaN kept, -inf to 0), the sum within 1e-12 relative of a double sum of the
 * results, and the AVX2 twin equal to the plain C bit for bit, values and sum, at lengths
 * around its 8 lanes. */
static void test_exp_sum(void) {
    enum { B = 4096 };
    static float x[B], y[B];
    int64_t worst = 0;
    float worst_at = 0;
    uint32_t u = 0x80000000u;
    const uint32_t end = 0xc2ae0000u; /* -87.0f */
    while (u < end) {
        int n = 0;
        for (; n < B && u < end; n++, u += 97) memcpy(&x[n], &u, 4);
        memcpy(y, x, sizeof(float) * (size_t)n);
        const double sum = hr_vexp_sum(y, n, 0.0f);
        double ref = 0;
        for (int i = 0; i < n; i++) {
            const int64_t d = ulp_diff(y[i], expf(x[i]));
            if (d > worst) worst = d, worst_at = x[i];
            ref += (double)y[i];
        }
        CHECKF(fabs(sum - ref) <= 1e-12 * ref, "exp sum %.17g vs %.17g", sum, ref);
    }
    printf("exp: worst %lld ulp at %a\n", (long long)worst, worst_at);
    CHECKF(worst <= 3, "exp off by %lld ulp at %a", (long long)worst, worst_at);
    float sp[] = {-87.5f, -1e30f, -INFINITY, NAN, 0.0f, -0.0f, 1e-30f - 1e-30f, -86.99f};
    const double ssum = hr_vexp_sum(sp, 8, 0.0f);
    CHECK(sp[0] == 0.0f && sp[1] == 0.0f && sp[2] == 0.0f && isnan(sp[3]) && sp[4] == 1.0f && sp[5] == 1.0f);
    CHECK(sp[7] > 0.0f && isnan(ssum));
#if defined(__x86_64__) && defined(__GNUC__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) return;
    hr_rng r = {11};
    static float a[B], b[B];
    for (int i = 0; i < B; i++) x[i] = (hr_rng_uniform(&r) - 1.0f) * (i % 5 ? 20.0f : 120.0f);
    x[3] = -INFINITY, x[100] = 0.0f;
    const int64_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 100, 1023, B};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const int64_t n = lens[li];
        memcpy(a, x, sizeof(float) * (size_t)n);
        memcpy(b, x, sizeof(float) * (size_t)n);
        const double sa = hr_vexp_sum_c(a, n, 0.5f), sb = hr_vexp_sum_avx2(b, n, 0.5f);
        CHECKF(memcmp(&sa, &sb, sizeof sa) == 0, "exp sum n %lld: %.17g vs %.17g", (long long)n, sa, sb);
        CHECKF(n == 0 || memcmp(a, b, sizeof(float) * (size_t)n) == 0, "exp values n %lld differ", (long long)n);
    }
#endif
}

/* SwiGLU (hr_vswiglu, and hr_ffn_act through it) against silu in double precision: within 4
 * ulp over every 977th float in [-80, 200] (below, silu is under 1e-33 and the exp flushes to
 * 0), in place too; specials: NaN stays NaN, silu(+Inf) = +Inf, silu(-0) = -0; lengths around
 * the 8-lane blocks. */
static void test_swiglu(void) {
    enum { B = 4096 };
    static float g[B], u[B], h[B], ip[B];
    int64_t worst = 0, n = 0;
    float at = 0;
    for (uint64_t b = 0; b < 0x100000000ull; b += 977) {
        const uint32_t bits = (uint32_t)b;
        float v;
        memcpy(&v, &bits, 4);
        if (!(v >= -80.0f && v <= 200.0f)) continue;
        g[n % B] = v, u[n % B] = 1.0f;
        if (++n % B) continue;
        hr_vswiglu(h, g, u, B);
        memcpy(ip, g, sizeof ip);
        hr_ffn_act(ip, ip, u, B, HR_ACT_SWIGLU);
        static float mg[B];
        hr_gate_mag(mg, g, B, HR_ACT_SWIGLU); /* threshold mode's |silu|: the same values' magnitudes */
        for (int i = 0; i < B; i++) {
            const float want = (float)((double)g[i] / (1.0 + exp(-(double)g[i])));
            const int64_t d = ulp_diff(h[i], want);
            if (d > worst) worst = d, at = g[i];
            CHECKF(same(ip[i], h[i]), "swiglu in place at %a", g[i]);
            CHECKF(same(mg[i], fabsf(h[i])), "|silu| at %a: %a vs %a", g[i], mg[i], h[i]);
        }
    }
    CHECKF(worst <= 4, "swiglu: %lld ulp at %a", (long long)worst, at);
    printf("swiglu: max error %lld ulp (at %g) over %lld floats in [-80, 200]\n", (long long)worst, at, (long long)n);
    const float sp[] = {NAN, INFINITY, -0.0f, 0.0f, 3.0f}, su[] = {1.0f, 1.0f, 1.0f, 1.0f, 2.0f};
    float out[5];
    for (int len = 1; len <= 5; len++) {
        hr_vswiglu(out, sp, su, len);
        CHECK(isnan(out[0]));
        if (len > 1) CHECK(out[1] == INFINITY);
        if (len > 2) CHECK(out[2] == 0.0f && signbit(out[2]));
        if (len > 3) CHECK(out[3] == 0.0f && !signbit(out[3]));
        if (len > 4) CHECK(fabsf(out[4] - (float)(6.0 / (1.0 + exp(-3.0)))) <= 4e-7f * 6);
    }
}

/* The ReLU-family activations (hr_vrelu_glu, and hr_ffn_act through it) against the
 * definition element by element, bit for bit: random values with NaN, +-0, +-Inf and denormals
 * among them, ragged lengths, out of place and in place (h == g). */
static float relu_ref(float v) { return v > 0 ? v : 0.0f; }
static void test_relu_glu(void) {
    hr_rng r = {13};
    enum { N = 1031 };
    const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f};
    float *g = malloc(sizeof(float) * N), *u = malloc(sizeof(float) * N), *h = malloc(sizeof(float) * N);
    float *ip = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        g[i] = i % 37 < 8 ? special[i % 37] : hr_rng_normal(&r);
        u[i] = i % 41 < 8 ? special[(i / 3) % 8] : hr_rng_normal(&r);
    }
    const int64_t lens[] = {0, 1, 3, 4, 7, 8, 15, 17, 33, N};
    int bad = 0;
    for (int both = 0; both < 2; both++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n = lens[li];
            memset(h, 0x7f, sizeof(float) * N);
            const float fill = h[N - 1];
            hr_vrelu_glu(h, g, u, n, both);
            bad += n < N && !same(h[n], fill); /* nothing past n written */
            memcpy(ip, g, sizeof(float) * N);
            hr_vrelu_glu(ip, ip, u, n, both);
            for (int64_t i = 0; i < n; i++) {
                const float want = relu_ref(g[i]) * (both ? relu_ref(u[i]) : u[i]);
                bad += !same(h[i], want) || !same(ip[i], want);
            }
            hr_ffn_act(h, g, u, n, both ? HR_ACT_DRELU : HR_ACT_REGLU);
            for (int64_t i = 0; i < n; i++) bad += !same(h[i], relu_ref(g[i]) * (both ? relu_ref(u[i]) : u[i]));
        }
    CHECKF(bad == 0, "relu activations: %d elements differ from relu(g) * u / relu(g) * relu(u)", bad);
    free(g), free(u), free(h), free(ip);
}

int main(void) {
    test_exp_sum();
    test_f16_twins();
    test_avx2_twins();
    test_accuracy();
    test_special();
    test_lengths();
    test_gelu_table();
    test_relu_glu();
    test_swiglu();
    return TEST_END();
}
