/* Type table, F16/BF16 conversions (known values and an independent double-precision
 * reference), and Q8_0/Q4_0 quantizers against straightforward spec implementations. */
#include <math.h>
#include <string.h>

#include "formats/types.h"
#include "formats/quant_internal.h"
#include "testutil.h"

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* IEEE half of x by explicit arithmetic: scale to an integer count of the half's quantum
 * at x's exponent, round half to even in double (exact here), re-encode. */
static uint16_t ref_f32_to_f16(float x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return sign | 0x7e00;
    double a = fabs((double)x);
    if (a == 0) return sign;
    int e;
    frexp(a, &e);                  /* a = m * 2^e, m in [0.5, 1) */
    int qexp = (e - 1 < -14 ? -14 : e - 1) - 10; /* quantum 2^qexp */
    double m = nearbyint(ldexp(a, -qexp));
    double v = ldexp(m, qexp);
    if (v >= 65536.0 - 16.0) return sign | 0x7c00; /* 65520 and above round to Inf */
    if (v < ldexp(1.0, -14)) return sign | (uint16_t)m; /* subnormal (or rounds up to min normal: m = 1024) */
    int ve;
    double vm = frexp(v, &ve);
    uint16_t exp = (uint16_t)(ve - 1 + 15);
    uint16_t man = (uint16_t)(ldexp(vm, 11) - 1024);
    return sign | (uint16_t)(exp << 10) | man;
}

static double ref_f16_value(uint16_t h) {
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    double s = (h & 0x8000) ? -1 : 1;
    if (exp == 0) return s * ldexp(man, -24);
    if (exp == 31) return man ? NAN : s * INFINITY;
    return s * ldexp(1024 + man, exp - 25);
}

/* The block types beyond Q8_0/Q4_0: ggml's ids, block sizes in bytes and elements, names
 * (ggml's, lower-case), and which are weight types (Q8_1, Q8_K only ever hold activations). */
static void test_table_blocks(void) {
    static const struct { uint32_t id, want_id; const char *name; uint64_t elems, bytes; bool weight; } kt[] = {
        {HR_Q4_1, 3, "q4_1", 32, 20, true},     {HR_Q5_0, 6, "q5_0", 32, 22, true},
        {HR_Q5_1, 7, "q5_1", 32, 24, true},     {HR_Q8_1, 9, "q8_1", 32, 36, false},
        {HR_Q2_K, 10, "q2_k", 256, 84, true},   {HR_Q3_K, 11, "q3_k", 256, 110, true},
        {HR_Q4_K, 12, "q4_k", 256, 144, true},  {HR_Q5_K, 13, "q5_k", 256, 176, true},
        {HR_Q6_K, 14, "q6_k", 256, 210, true},  {HR_Q8_K, 15, "q8_k", 256, 292, false},
        {HR_IQ4_NL, 20, "iq4_nl", 32, 18, true}, {HR_IQ4_XS, 23, "iq4_xs", 256, 136, true},
        {HR_MXFP4, 39, "mxfp4", 32, 17, true},
    };
    for (size_t i = 0; i < sizeof kt / sizeof kt[0]; i++) {
        const uint32_t t = kt[i].id;
        CHECKF(t == kt[i].want_id, "%s has id %u, ggml's is %u", kt[i].name, t, kt[i].want_id);
        CHECKF(hr_type_known(t) && hr_type_is_quant(t), "%s", kt[i].name);
        CHECKF(hr_type_name(t) && strcmp(hr_type_name(t), kt[i].name) == 0, "%s", kt[i].name);
        CHECKF(hr_type_block_elems(t) == kt[i].elems && hr_type_block_bytes(t) == kt[i].bytes, "%s: %llu/%llu",
               kt[i].name, (unsigned long long)hr_type_block_elems(t), (unsigned long long)hr_type_block_bytes(t));
        CHECKF(hr_type_is_weight(t) == kt[i].weight, "%s weight flag", kt[i].name);
        char upper[16];
        size_t k = 0;
        for (; kt[i].name[k] && k + 1 < sizeof upper; k++)
            upper[k] = (char)(kt[i].name[k] >= 'a' && kt[i].name[k] <= 'z' ? kt[i].name[k] - 32 : kt[i].name[k]);
        upper[k] = 0;
        CHECKF(hr_type_from_name(kt[i].name) == (int)t && hr_type_from_name(upper) == (int)t, "%s", kt[i].name);
        CHECK(hr_row_bytes(t, 4096) == 4096 / kt[i].elems * kt[i].bytes);
        CHECK(hr_row_bytes(t, kt[i].elems + 16) == 0); /* not a whole number of blocks */
    }
    /* ids ggml uses for types Hearth does not hold stay unknown */
    static const uint32_t unknown[] = {4, 5, 16, 17, 19, 21, 22, 27, 28, 29, 31, 34, 35, 38};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        CHECKF(!hr_type_known(unknown[i]) && hr_type_block_bytes(unknown[i]) == 0, "id %u", unknown[i]);
    CHECK(!hr_type_is_quant(HR_F16) && !hr_type_is_quant(HR_I8));
}

static void test_table(void) {
    CHECK(hr_type_block_bytes(HR_Q8_0) == 34 && hr_type_block_elems(HR_Q8_0) == 32);
    CHECK(hr_type_block_bytes(HR_Q4_0) == 18 && hr_type_block_elems(HR_Q4_0) == 32);
    CHECK(hr_type_block_bytes(HR_F16) == 2 && hr_type_block_bytes(HR_BF16) == 2);
    CHECK(hr_type_block_bytes(HR_F32) == 4 && hr_type_block_bytes(HR_I32) == 4);
    CHECK(hr_type_block_bytes(HR_I32_OLD) == 4 && hr_type_block_bytes(HR_I8) == 1 && hr_type_block_bytes(HR_I16) == 2);
    CHECK(!hr_type_known(4) && !hr_type_known(16) && !hr_type_known(HR_TYPE_MAX) && !hr_type_known(0xffffffffu));
    CHECK(hr_type_name(5) == NULL && hr_type_block_bytes(5) == 0);
    CHECK(strcmp(hr_type_name(HR_Q4_0), "q4_0") == 0 && strcmp(hr_type_name(HR_BF16), "bf16") == 0);
    CHECK(hr_type_from_name("Q8_0") == HR_Q8_0 && hr_type_from_name("f16") == HR_F16);
    CHECK(hr_type_from_name("i32") == HR_I32 && hr_type_from_name("nope") == -1 && hr_type_from_name(NULL) == -1);
    CHECK(hr_row_bytes(HR_Q8_0, 64) == 68 && hr_row_bytes(HR_Q4_0, 4096) == 128 * 18);
    CHECK(hr_row_bytes(HR_Q8_0, 33) == 0 && hr_row_bytes(HR_F16, 33) == 66);
    CHECK(hr_row_bytes(HR_F32, UINT64_MAX / 2) == 0 && hr_row_bytes(5, 32) == 0);
    CHECK(hr_type_is_weight(HR_Q4_0) && hr_type_is_weight(HR_BF16) && !hr_type_is_weight(HR_I32));
    test_table_blocks();
}

static void test_f16_known(void) {
    static const struct { float f; uint16_t h; } kv[] = {
        {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.0f, 0x0000}, {-0.0f, 0x8000}, {65504.0f, 0x7bff},
        {65519.99f, 0x7bff}, {65520.0f, 0x7c00}, {1e10f, 0x7c00}, {0x1p-24f, 0x0001},
        {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001}, {0x1p-14f, 0x0400}, {0x1.ff8p-15f, 0x03ff},
        {0x1.ffcp-15f, 0x0400} /* subnormal/normal tie -> even */,
        {0x1.002p0f, 0x3c00} /* tie -> even */, {0x1.006p0f, 0x3c02} /* tie -> even (up) */,
        {0x1.0021p0f, 0x3c01}, {0x1.004p0f, 0x3c01}, {0.1f, 0x2e66}, {-65504.0f, 0xfbff},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        CHECKF(hr_f32_to_f16(kv[i].f) == kv[i].h, "%a -> %04x want %04x", kv[i].f, hr_f32_to_f16(kv[i].f), kv[i].h);
    CHECK(hr_f32_to_f16(INFINITY) == 0x7c00 && hr_f32_to_f16(-INFINITY) == 0xfc00);
    CHECK(hr_f32_to_f16(NAN) == 0x7e00 && hr_f32_to_f16(-NAN) == 0xfe00);
    CHECK(hr_f32_to_f16(u2f(0x7f800001)) == 0x7e00); /* signalling NaN stays NaN */
    CHECK(hr_f16_to_f32(0x7c00) == INFINITY && isnan(hr_f16_to_f32(0x7e00)) && isnan(hr_f16_to_f32(0x7c01)));
    CHECK(f2u(hr_f16_to_f32(0x8000)) == 0x80000000u);
}

static void test_f16_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = hr_f16_to_f32((uint16_t)h);
        int is_nan = ((h >> 10) & 0x1f) == 31 && (h & 0x3ff);
        if (is_nan) { bad += !isnan(f); continue; }
        bad += (double)f != ref_f16_value((uint16_t)h);
        bad += hr_f32_to_f16(f) != h; /* every half survives the round trip */
    }
    CHECKF(bad == 0, "%d halves wrong", bad);
}

static void test_f16_random(void) {
    hr_rng r = {42};
    int bad = 0;
    for (int i = 0; i < 400000; i++) {
        float f;
        if (i & 1) f = u2f((uint32_t)hr_rng_next(&r)); /* any bit pattern */
        else f = ldexpf(hr_rng_uniform(&r) * 2 - 1, (int)(hr_rng_next(&r) % 50) - 30); /* f16 range */
        if (isnan(f)) continue;
        if (hr_f32_to_f16(f) != ref_f32_to_f16(f)) {
            if (bad++ < 5) fprintf(stderr, "%a: %04x vs ref %04x\n", f, hr_f32_to_f16(f), ref_f32_to_f16(f));
        }
    }
    CHECKF(bad == 0, "%d mismatches against the reference", bad);
}

static void test_bf16(void) {
    CHECK(hr_f32_to_bf16(1.0f) == 0x3f80 && hr_f32_to_bf16(-2.0f) == 0xc000);
    CHECK(hr_f32_to_bf16(u2f(0x3f808000)) == 0x3f80); /* tie -> even (down) */
    CHECK(hr_f32_to_bf16(u2f(0x3f818000)) == 0x3f82); /* tie -> even (up) */
    CHECK(hr_f32_to_bf16(u2f(0x3f808001)) == 0x3f81);
    CHECK(hr_f32_to_bf16(u2f(0x3f807fff)) == 0x3f80);
    CHECK(hr_f32_to_bf16(u2f(0x7f7fffff)) == 0x7f80); /* FLT_MAX rounds to Inf */
    CHECK(hr_f32_to_bf16(INFINITY) == 0x7f80 && hr_f32_to_bf16(-INFINITY) == 0xff80);
    CHECK(hr_f32_to_bf16(u2f(0x7f800001)) == 0x7fc0); /* sNaN -> quiet */
    CHECK(hr_f32_to_bf16(u2f(0xffc00000)) == 0xffc0);
    CHECK(hr_f32_to_bf16(u2f(0x00000001)) == 0x0000 && hr_f32_to_bf16(u2f(0x00018000)) == 0x0002);
    hr_rng r = {7};
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        uint32_t u = (uint32_t)hr_rng_next(&r);
        float f = u2f(u);
        if (isnan(f)) continue;
        /* nearest of the two bf16 neighbours, ties to the even one, computed in double */
        uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
        double dl = fabs((double)f - hr_bf16_to_f32(lo)), dh = fabs((double)f - hr_bf16_to_f32(hi));
        uint16_t want = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
        if ((u & 0xffff) == 0) want = lo;
        if ((lo & 0x7fff) == 0x7f7f && (u & 0xffff) >= 0x8000) want = (uint16_t)(lo + 1); /* to Inf */
        bad += hr_f32_to_bf16(f) != want;
        bad += f2u(hr_bf16_to_f32(lo)) != ((uint32_t)lo << 16);
    }
    CHECKF(bad == 0, "%d bf16 mismatches", bad);
}

/* Q8_0 per spec: scale = amax/127, q = round-half-away(x / scale) using the reciprocal. */
static void spec_q8_0(const float *x, uint8_t *out, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) if (fabsf(x[b * 32 + j]) > amax) amax = fabsf(x[b * 32 + j]);
        float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0;
        uint16_t dh = hr_f32_to_f16(d);
        memcpy(out + b * 34, &dh, 2);
        for (int j = 0; j < 32; j++) out[b * 34 + 2 + j] = (uint8_t)(int8_t)lroundf(x[b * 32 + j] * inv);
    }
}

/* Q4_0 per spec: the signed value of largest magnitude maps to -8; q = trunc(x/d + 8.5)
 * capped at 15; low nibbles hold elements 0..15, high nibbles 16..31. */
static void spec_q4_0(const float *x, uint8_t *out, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        const float *v = x + b * 32;
        int arg = 0;
        for (int j = 1; j < 32; j++) if (fabsf(v[j]) > fabsf(v[arg])) arg = j;
        float d = v[arg] / -8.0f, inv = d != 0 ? 1.0f / d : 0;
        uint16_t dh = hr_f32_to_f16(d);
        memcpy(out + b * 18, &dh, 2);
        for (int j = 0; j < 16; j++) {
            int lo = (int)(v[j] * inv + 8.5f), hi = (int)(v[j + 16] * inv + 8.5f);
            if (lo > 15) lo = 15;
            if (hi > 15) hi = 15;
            out[b * 18 + 2 + j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

static void fill(hr_rng *r, float *x, int64_t n, int mode) {
    for (int64_t i = 0; i < n; i++) {
        float v = hr_rng_normal(r);
        if (mode == 1) v *= 1e-3f;
        if (mode == 2 && i % 32 < 16) v = 0;   /* half-zero blocks */
        if (mode == 3 && i < 32) v = 0;        /* an all-zero block */
        if (mode == 4) v = (float)((int)(hr_rng_next(r) % 255) - 127) * 0.5f; /* many exact ties */
        x[i] = v;
    }
}

static void test_quant(void) {
    enum { N = 32 * 64 };
    static float x[N], y[N];
    static uint8_t q[N * 2], s[N * 2];
    hr_rng r = {99};
    for (int mode = 0; mode < 5; mode++) {
        fill(&r, x, N, mode);
        hr_quant_row(HR_Q8_0, x, q, N);
        spec_q8_0(x, s, N);
        CHECKF(memcmp(q, s, hr_row_bytes(HR_Q8_0, N)) == 0, "q8_0 bytes differ from spec, mode %d", mode);
        hr_dequant_row(HR_Q8_0, q, y, N);
        for (int b = 0; b < N / 32; b++) {
            const hr_block_q8_0 *blk = (const hr_block_q8_0 *)q + b;
            float d = hr_f16_to_f32(blk->d), amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            /* half a step of the exact scale, plus |q| <= 127 times the F16 scale's error */
            double bound = amax / 127.0 * 0.5 + 128 * fabs(d - amax / 127.0) + 1e-30;
            for (int j = 0; j < 32; j++) {
                int i = b * 32 + j;
                CHECK(y[i] == blk->qs[j] * d);
                CHECKF(fabsf(y[i] - x[i]) <= bound, "q8_0 err %g at %d", y[i] - x[i], i);
            }
        }
        hr_quant_row(HR_Q4_0, x, q, N);
        spec_q4_0(x, s, N);
        CHECKF(memcmp(q, s, hr_row_bytes(HR_Q4_0, N)) == 0, "q4_0 bytes differ from spec, mode %d", mode);
        hr_dequant_row(HR_Q4_0, q, y, N);
        for (int b = 0; b < N / 32; b++) {
            float d = fabsf(hr_f16_to_f32(((const hr_block_q4_0 *)q)[b].d)), amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            /* at most one step (the +8 end is capped at 15), plus |q-8| <= 8 times the F16
             * scale's error */
            double bound = amax / 8.0 + 9 * fabs(d - amax / 8.0) + 1e-30;
            for (int j = 0; j < 32; j++) {
                int i = b * 32 + j;
                CHECKF(fabsf(y[i] - x[i]) <= bound, "q4_0 err %g at %d", y[i] - x[i], i);
            }
        }
    }
    /* Q4_0 reproduces the largest-magnitude value exactly up to the F16 scale */
    float blk[32] = {0};
    blk[5] = -3.0f; blk[9] = 1.0f;
    hr_quant_row(HR_Q4_0, blk, q, 32);
    hr_dequant_row(HR_Q4_0, q, y, 32);
    CHECK(y[5] == -3.0f && y[9] == 1.125f && y[0] == 0.0f); /* d = 0.375: 1 -> 3 steps */
    /* round trips of plain types */
    fill(&r, x, N, 0);
    hr_quant_row(HR_F16, x, q, N);
    hr_dequant_row(HR_F16, q, y, N);
    for (int i = 0; i < N; i++) CHECK(fabsf(y[i] - x[i]) <= fabsf(x[i]) * 0x1p-11f);
    hr_quant_row(HR_BF16, x, q, N);
    hr_dequant_row(HR_BF16, q, y, N);
    for (int i = 0; i < N; i++) CHECK(fabsf(y[i] - x[i]) <= fabsf(x[i]) * 0x1p-8f);
}

/* The IQ4 quantizers' level lookup against the plain nearest-level search it replaces: every
 * midpoint of neighbouring levels and the floats next to it, a random sweep past both ends,
 * and the special values. */
static void test_iq4_lookup(void) {
    int bad = 0;
    for (int i = 0; i + 1 < 16; i++) {
        float m = 0.5f * (float)(hr_kvalues_iq4nl[i] + hr_kvalues_iq4nl[i + 1]);
        float v = m;
        for (int k = 0; k < 8; k++) v = nextafterf(v, -INFINITY);
        for (int k = 0; k < 17; k++, v = nextafterf(v, INFINITY))
            bad += hr_iq4_index_2v(2 * v) != hr_qbest_index(hr_kvalues_iq4nl, v);
    }
    hr_rng r = {11};
    for (int i = 0; i < 200000; i++) {
        const float v = (hr_rng_uniform(&r) - 0.5f) * (i & 1 ? 600.0f : 3.0f);
        bad += hr_iq4_index_2v(2 * v) != hr_qbest_index(hr_kvalues_iq4nl, v);
    }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e30f, -1e30f, 1e-40f, -1e-40f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        bad += hr_iq4_index_2v(2 * special[i]) != hr_qbest_index(hr_kvalues_iq4nl, special[i]);
    CHECKF(bad == 0, "%d values where the IQ4 lookup and the search disagree", bad);
    CHECK(hr_iq4_index_2v(NAN) == 15);
}

int main(void) {
    test_table();
    test_f16_known();
    test_f16_exhaustive();
    test_f16_random();
    test_bf16();
    test_quant();
    test_iq4_lookup();
    return TEST_END();
}
