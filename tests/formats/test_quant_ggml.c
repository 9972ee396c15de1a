/* Hearth's reference quantizers and dequantizers against ggml's own, loaded from llama.cpp's
 * libggml-base.so (ggml_ref.h): the quantized bytes must be identical and the dequantized
 * values bit-identical, on many row lengths and value distributions, and on random bytes.
 * NaN/Inf input must run to completion (and, for the types where ggml's result is defined,
 * agree with it). Skips (77) without the library. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "formats/types.h"
#include "ggml_ref.h"
#include "testutil.h"

static const uint32_t k_types[] = {HR_Q4_0, HR_Q8_0, HR_Q4_1, HR_Q5_0, HR_Q5_1, HR_Q8_1, HR_IQ4_NL, HR_MXFP4,
                                   HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_Q8_K, HR_IQ4_XS};
#define NTYPES (sizeof k_types / sizeof k_types[0])

enum { MAXN = 8192 };

enum dist {
    D_GAUSS, D_UNIFORM, D_POSITIVE, D_OUTLIERS, D_ZEROS, D_CONST, D_TINY, D_HUGE, D_MIXED, D_ONE,
    D_BLOCK_SCALES, D_HALF_STEPS, D_SOME_ZERO_BLOCKS, D_SMALL, D_WIDE, D_COUNT
};
static const char *const k_dist_names[D_COUNT] = {
    "gaussian", "uniform", "positive", "outliers", "zeros", "constant", "tiny", "huge", "mixed-signs",
    "one-nonzero", "block-scales", "half-steps", "some-zero-blocks", "small", "wide"};

static void fill(hr_rng *r, float *x, int n, enum dist d) {
    const float c = hr_rng_normal(r);
    const int one = (int)(hr_rng_next(r) % (uint64_t)n);
    float block_scale = 1, wide_scale = 1;
    for (int i = 0; i < n; i++) {
        if (i % 32 == 0) block_scale = ldexpf(1.0f, (int)(hr_rng_next(r) % 41) - 20);
        if (i % 16 == 0) wide_scale = ldexpf(1.0f, (int)(hr_rng_next(r) % 121) - 60); /* F16 scales over/underflow */
        float v = hr_rng_normal(r);
        switch (d) {
        case D_GAUSS: break;
        case D_UNIFORM: v = hr_rng_uniform(r) * 2 - 1; break;
        case D_POSITIVE: v = hr_rng_uniform(r) + 0.25f; break; /* min > 0: the offset types clamp it */
        case D_OUTLIERS: if (hr_rng_next(r) % 50 == 0) v *= 100; break;
        case D_ZEROS: v = 0; break;
        case D_CONST: v = c; break;
        case D_TINY: v *= 1e-30f; break;
        case D_HUGE: v *= 1e30f; break;
        case D_MIXED: v = (i & 1 ? -1.f : 1.f) * (1 + hr_rng_uniform(r)); break;
        case D_ONE: v = i == one ? c : 0; break;
        case D_BLOCK_SCALES: v *= block_scale; break;
        case D_HALF_STEPS: v = (float)((int)(hr_rng_next(r) % 33) - 16) * 0.5f; break; /* many ties */
        case D_SOME_ZERO_BLOCKS: if ((i / 32) % 3 == 1) v = 0; break;
        case D_SMALL: v *= 1e-6f; break; /* F16 scales become subnormal */
        case D_WIDE: v *= wide_scale; break;
        default: break;
        }
        x[i] = v;
    }
}

/* ggml leaves IQ4_NL's levels of an all-zero block unset (d = 0 makes them irrelevant): such
 * blocks are compared on their scale only. */
static bool byte_compared(uint32_t t, const float *x, size_t byte) {
    if (t != HR_IQ4_NL) return true;
    const size_t blk = byte / sizeof(hr_block_iq4_nl);
    if (byte % sizeof(hr_block_iq4_nl) < 2) return true;
    float amax = 0;
    for (int j = 0; j < HR_QK; j++) amax = fmaxf(amax, fabsf(x[blk * HR_QK + j]));
    return amax >= 1e-15f;
}

/* first differing byte, or -1 */
static long first_diff(uint32_t t, const float *x, const uint8_t *a, const uint8_t *b, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i] && byte_compared(t, x, i)) return (long)i;
    return -1;
}

static bool same_floats(const float *a, const float *b, int n, int *at) {
    for (int i = 0; i < n; i++) {
        uint32_t ua, ub;
        memcpy(&ua, &a[i], 4);
        memcpy(&ub, &b[i], 4);
        if (ua != ub && !(isnan(a[i]) && isnan(b[i]))) { *at = i; return false; }
    }
    return true;
}

typedef struct {
    float x[MAXN], ya[MAXN], yb[MAXN];
    uint8_t qa[MAXN * 2], qb[MAXN * 2];
} bufs;

static void check_dequant(const hr_ggml *g, uint32_t t, bufs *b, const uint8_t *q, int n, const char *what) {
    if (!hr_ggml_dequant(g, t)) return;
    hr_ggml_dequant_row(g, t, q, b->ya, n);
    hr_dequant_row(t, q, b->yb, n);
    int at = -1;
    CHECKF(same_floats(b->ya, b->yb, n, &at), "%s dequant of %s (n %d) at %d: ggml %a hearth %a", hr_type_name(t),
           what, n, at, at >= 0 ? b->ya[at] : 0, at >= 0 ? b->yb[at] : 0);
}

static void test_quant(const hr_ggml *g, bufs *b) {
    static const int lens[] = {32, 64, 256, 512, 4096, 8192};
    hr_rng r = {2024};
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const uint32_t t = k_types[ti];
        int bad = 0, cases = 0;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int n = lens[li];
            if (n % (int)hr_type_block_elems(t)) continue;
            const size_t len = hr_row_bytes(t, (uint64_t)n);
            for (int rep = 0; rep < 3 * D_COUNT; rep++) {
                const int d = rep % D_COUNT;
                fill(&r, b->x, n, (enum dist)d);
                /* ggml leaves Q8_K's sums of a zero block unwritten: start from zeros there;
                 * Hearth starts from a pattern, so every byte it should write is checked */
                memset(b->qa, 0, len);
                memset(b->qb, 0xA5, len);
                hr_ggml_quant_row(g, t, b->x, b->qa, n);
                hr_quant_row(t, b->x, b->qb, n);
                cases++;
                const long at = first_diff(t, b->x, b->qa, b->qb, len);
                if (at >= 0 && bad++ < 3)
                    fprintf(stderr, "%s, %s, n %d: byte %ld (block %ld) ggml %02x hearth %02x\n", hr_type_name(t),
                            k_dist_names[d], n, at, at / (long)hr_type_block_bytes(t), b->qa[at], b->qb[at]);
                check_dequant(g, t, b, b->qa, n, k_dist_names[d]);
            }
        }
        CHECKF(bad == 0, "%s: %d of %d rows differ from ggml's bytes", hr_type_name(t), bad, cases);
    }
}

/* Random bytes with every float scale field made finite (an F16 exponent below 31, a finite
 * F32), so the values are numbers. */
static void finite_f16(uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    if (((h >> 10) & 0x1f) == 0x1f) h = (uint16_t)(h & ~0x4000u);
    memcpy(p, &h, 2);
}

static void force_finite(uint32_t t, uint8_t *blk) {
    switch (t) {
    case HR_Q4_0: case HR_Q8_0: case HR_Q5_0: case HR_IQ4_NL: case HR_IQ4_XS: finite_f16(blk); break;
    case HR_Q4_1: case HR_Q5_1: case HR_Q8_1: case HR_Q4_K: case HR_Q5_K: finite_f16(blk); finite_f16(blk + 2); break;
    case HR_Q2_K:
        finite_f16(blk + offsetof(hr_block_q2_K, d));
        finite_f16(blk + offsetof(hr_block_q2_K, dmin));
        break;
    case HR_Q3_K: finite_f16(blk + offsetof(hr_block_q3_K, d)); break;
    case HR_Q6_K: finite_f16(blk + offsetof(hr_block_q6_K, d)); break;
    case HR_Q8_K: {
        float f;
        memcpy(&f, blk, 4);
        if (!isfinite(f)) f = 1.5f;
        memcpy(blk, &f, 4);
    } break;
    default: break; /* MXFP4's E8M0 scale is finite for every byte */
    }
}

static void test_random_bytes(const hr_ggml *g, bufs *b) {
    hr_rng r = {77};
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const uint32_t t = k_types[ti];
        if (!hr_ggml_dequant(g, t)) {
            printf("note: ggml has no dequantize_row_%s; its dequantizer is checked against the quantizer only\n",
                   hr_type_name(t));
            continue;
        }
        for (int rep = 0; rep < 8; rep++) {
            const int n = 4096;
            const size_t len = hr_row_bytes(t, n), bb = hr_type_block_bytes(t);
            for (size_t i = 0; i < len; i++) b->qa[i] = (uint8_t)hr_rng_next(&r);
            for (size_t off = 0; off < len; off += bb) force_finite(t, b->qa + off);
            check_dequant(g, t, b, b->qa, n, "random bytes");
        }
    }
}

/* Q8_1 has no ggml dequantizer: check Hearth's against its definition, qs * d, and s. */
static void test_q8_1_values(bufs *b) {
    hr_rng r = {5};
    fill(&r, b->x, 512, D_GAUSS);
    hr_quant_row(HR_Q8_1, b->x, b->qb, 512);
    hr_dequant_row(HR_Q8_1, b->qb, b->yb, 512);
    const hr_block_q8_1 *q = (const hr_block_q8_1 *)b->qb;
    for (int i = 0; i < 512 / 32; i++) {
        int sum = 0;
        float amax = 0;
        for (int j = 0; j < 32; j++) {
            CHECK(b->yb[i * 32 + j] == q[i].qs[j] * hr_f16_to_f32(q[i].d));
            sum += q[i].qs[j];
            amax = fmaxf(amax, fabsf(b->x[i * 32 + j]));
        }
        /* s uses the unrounded F32 scale */
        CHECK(q[i].d == hr_f32_to_f16(amax / 127));
        CHECK(q[i].s == hr_f32_to_f16(sum * (amax / 127)));
    }
}

/* Where ggml's result is defined on NaN/Inf (its K-quant and IQ4 paths round with a bit trick
 * that is total); the 32-element types convert with C casts, undefined for NaN. */
static bool nonfinite_defined(uint32_t t) {
    return t >= HR_Q2_K && t != HR_MXFP4;
}

static void test_nonfinite(const hr_ggml *g, bufs *b) {
    hr_rng r = {13};
    const float specials[3] = {NAN, INFINITY, -INFINITY};
    for (size_t ti = 0; ti < NTYPES; ti++) {
        const uint32_t t = k_types[ti];
        const int n = 1024;
        const size_t len = hr_row_bytes(t, n);
        int differ = 0;
        for (int mode = 0; mode < 6; mode++) {
            for (int i = 0; i < n; i++) {
                float v = hr_rng_normal(&r);
                if (mode < 3 && hr_rng_next(&r) % 17 == 0) v = specials[mode];    /* scattered */
                if (mode == 3) v = specials[i % 3];                               /* all special */
                if (mode == 4 && i % 64 == 5) v = specials[(i / 64) % 3];         /* one per block */
                if (mode == 5) v = i % 2 ? NAN : 0.0f;
                b->x[i] = v;
            }
            memset(b->qa, 0, len);
            memset(b->qb, 0, len);
            hr_quant_row(t, b->x, b->qb, n); /* must finish, sanitizers silent */
            hr_dequant_row(t, b->qb, b->yb, n);
            hr_ggml_quant_row(g, t, b->x, b->qa, n);
            const long at = first_diff(t, b->x, b->qa, b->qb, len);
            if (at < 0) continue;
            differ++;
            CHECKF(!nonfinite_defined(t), "%s, NaN/Inf mode %d: byte %ld ggml %02x hearth %02x", hr_type_name(t),
                   mode, at, b->qa[at], b->qb[at]);
        }
        if (differ && !nonfinite_defined(t))
            printf("note: %s on NaN/Inf differs from ggml in %d of 6 rows (undefined in ggml)\n", hr_type_name(t),
                   differ);
    }
}

static void test_dispatch(void) {
    float x[32] = {1};
    uint8_t q[64];
    CHECK(!hr_quant_row_blocks(HR_F32, x, q, 32) && !hr_quant_row_blocks(HR_Q8_0, x, q, 32));
    CHECK(!hr_quant_row_blocks(4, x, q, 32) && !hr_quant_row_blocks(HR_TYPE_MAX, x, q, 32));
    CHECK(hr_quant_row_blocks(HR_Q4_1, x, q, 32) && hr_quant_row_blocks(HR_MXFP4, x, q, 32));
}

int main(void) {
    hr_ggml g;
    char why[1200];
    if (!hr_ggml_open(&g, why, sizeof why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    for (size_t ti = 0; ti < NTYPES; ti++)
        if (!hr_ggml_quant(&g, k_types[ti])) {
            printf("SKIP: %s lacks quantize_row_%s_ref\n", g.path, hr_type_name(k_types[ti]));
            hr_ggml_close(&g);
            return 77;
        }
    bufs *b = malloc(sizeof *b);
    if (!b) return 1;
    test_dispatch();
    test_quant(&g, b);
    test_random_bytes(&g, b);
    test_q8_1_values(b);
    test_nonfinite(&g, b);
    free(b);
    hr_ggml_close(&g);
    return TEST_END();
}
