/* Every SIMD kernel table against the scalar reference: act_prep byte-identical,
 * vec_dot within a float-summation bound of a double-precision dot of the same
 * (dequantized) operands, tiles bit-identical to vec_dot, odd lengths throughout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "kernel_rows.h"
#include "testutil.h"

static const uint32_t k_types[] = {HR_F32,  HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0,   HR_Q4_1,
                                   HR_Q5_0, HR_Q5_1, HR_IQ4_NL, HR_MXFP4, HR_Q2_K, HR_Q3_K,
                                   HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
/* K-quants and IQ4_XS: their SIMD kernels come from another file; a table may lack them */
static int is_k256(uint32_t t) { return kt_block(t) == HR_QK_K; }
static const int64_t k_len_block[] = {32, 64, 96, 160, 4096 + 32, 4096 + 64};
static const int64_t k_len_k256[] = {256, 512, 768, 2304, 4096 + 256};
static const int64_t k_len_plain[] = {1, 7, 8, 15, 16, 17, 33, 1023, 4096 + 33};

static void fill(hr_rng *r, float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r) * (i % 5 == 0 ? 4.0f : 1.0f);
}

static void make_row(hr_rng *r, uint32_t t, void *w, int64_t n, float *tmp) {
    (void)tmp;
    kt_weight_row(r, t, w, n);
}

/* Bound for a float accumulation: each SIMD lane chains about n/8 additions (quant types:
 * one per block), plus the horizontal sum and tail; recursive summation of k terms errs by at
 * most k*u*sum|terms| (u = 2^-24). Scalar float sums over blocks chain n/32. Factor 2 for
 * slack. Real bugs (a lost block, a wrong scale) err by about one term, which is far larger
 * than this for the lengths tested. */
static double tol(int64_t n, double abs_sum) { return 2.0 * ((double)n / 8 + 32) * 0x1p-24 * abs_sum + 1e-30; }

static void check_dot(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    size_t wb = hr_row_bytes(t, (uint64_t)n), xb = hr_act_bytes(t, n);
    void *w = malloc(wb), *xq = malloc(xb), *xs = malloc(xb);
    float *x = malloc(n * sizeof *x);
    make_row(r, t, w, n, x);
    fill(r, x, n);
    k->act_prep[t](x, xq, n);
    hr_kernels_scalar()->act_prep[t](x, xs, n);
    CHECKF(memcmp(xq, xs, xb) == 0, "%s act_prep %s n=%lld differs from scalar", k->name, hr_type_name(t), (long long)n);
    double abs_sum;
    const double ref = kt_ref_dot(t, w, xs, n, &abs_sum);
    float s = NAN, s0 = NAN;
    k->vec_dot[t](n, &s, w, xq);
    hr_kernels_scalar()->vec_dot[t](n, &s0, w, xs);
    CHECKF(fabs(s - ref) <= tol(n, abs_sum), "%s dot %s n=%lld: %.9g vs ref %.9g", k->name, hr_type_name(t), (long long)n, s, ref);
    CHECKF(fabs(s0 - ref) <= tol(n, abs_sum), "scalar dot %s n=%lld: %.9g vs ref %.9g", hr_type_name(t), (long long)n, s0, ref);
    free(w); free(xq); free(xs); free(x);
}

/* Tile and rows2 outputs equal vec_dot's, bit for bit (matmul relies on it for batch invariance). */
static void check_tile(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    hr_tile_fn tile = hr_kernels_ext_of(k)->tile[t];
    if (!tile && !hr_kernels_ext_of(k)->rows2[t]) return;
    size_t wb = hr_row_bytes(t, (uint64_t)n), xb = hr_act_bytes(t, n);
    /* strides not multiples of a block or a cache line, to catch stride bugs; they keep the
     * alignment the block structs need (2 bytes for F16 scales, 4 for Q8_K's float d), as
     * hr_matmul's 64-byte strides do */
    size_t ws = wb + 6, xs = xb + 12;
    char *w = malloc(ws * HR_TILE_R), *xq = malloc(xs * HR_TILE_C);
    float *x = malloc(n * sizeof *x);
    for (int i = 0; i < HR_TILE_R; i++) make_row(r, t, w + i * ws, n, x);
    for (int c = 0; c < HR_TILE_C; c++) {
        fill(r, x, n);
        k->act_prep[t](x, xq + c * xs, n);
    }
    float y[HR_TILE_C * 5];
    for (int i = 0; i < HR_TILE_C * 5; i++) y[i] = -1234.5f;
    if (tile) tile(n, w, ws, xq, xs, y, 5);
    for (int c = 0; tile && c < HR_TILE_C; c++)
        for (int i = 0; i < 5; i++) {
            if (i >= HR_TILE_R) { CHECK(y[c * 5 + i] == -1234.5f); continue; }
            float s;
            k->vec_dot[t](n, &s, w + i * ws, xq + c * xs);
            CHECKF(memcmp(&s, &y[c * 5 + i], 4) == 0, "%s tile %s n=%lld (%d,%d): %.9g vs %.9g", k->name, hr_type_name(t), (long long)n, i, c, y[c * 5 + i], s);
        }
    hr_tile_fn rows2 = hr_kernels_ext_of(k)->rows2[t];
    if (rows2) { /* 2 rows x 1 token, the decode kernel */
        float y2[3] = {-1234.5f, -1234.5f, -1234.5f};
        rows2(n, w, ws, xq + xs, 0, y2, 0);
        for (int i = 0; i < 2; i++) {
            float s;
            k->vec_dot[t](n, &s, w + i * ws, xq + xs);
            CHECKF(memcmp(&s, &y2[i], 4) == 0, "%s rows2 %s n=%lld row %d: %.9g vs %.9g", k->name, hr_type_name(t), (long long)n, i, y2[i], s);
        }
        CHECK(y2[2] == -1234.5f);
    }
    free(w); free(xq); free(x);
}

/* Q8_0 activation rounding is llama.cpp's x86 one: ties go to even. */
static void check_q8_ties(const hr_kernels *k) {
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)(i % 16) * 0.5f * ((i & 16) ? -1 : 1);
    x[31] = 127.0f; x[63] = -127.0f; /* amax 127 -> id = 1: x*id are exact halves */
    hr_block_q8_0 b[2];
    k->act_prep[HR_Q8_0](x, b, 64);
    for (int i = 0; i < 64; i++) {
        if (i == 31 || i == 63) continue;
        float want = nearbyintf(x[i]); /* default mode: nearest, ties to even */
        CHECKF(b[i / 32].qs[i % 32] == (int8_t)want, "%s q8 tie %g -> %d", k->name, x[i], b[i / 32].qs[i % 32]);
    }
    CHECK(b[0].qs[31] == 127 && b[1].qs[31] == -127 && hr_f16_to_f32(b[0].d) == hr_f16_to_f32(hr_f32_to_f16(1.0f)));
    float z[32] = {0};
    k->act_prep[HR_Q8_0](z, b, 32);
    CHECK(b[0].d == 0);
    for (int i = 0; i < 32; i++) CHECK(b[0].qs[i] == 0);
}

/* Q8_1 (ggml's x86 quantize_row_q8_1): per block q = x*127/amax rounded to nearest (ties
 * to even), d = F16(amax/127), s = F16 of the float product (amax/127) * sum(q). */
static void check_prep_q8_1(const hr_kernels *k, hr_rng *r) {
    if (!k->act_prep[HR_Q4_1]) return; /* reported as missing in main */
    enum { NB = 5 };
    float x[NB * HR_QK];
    fill(r, x, NB * HR_QK);
    for (int j = 0; j < HR_QK; j++) x[2 * HR_QK + j] = 0.0f; /* an all-zero block */
    for (int j = 0; j < HR_QK; j++) x[3 * HR_QK + j] = (float)(j % 16) * 0.5f * ((j & 16) ? -1 : 1);
    x[3 * HR_QK + 31] = 127.0f; /* amax 127: x*id are exact halves, ties to even */
    hr_block_q8_1 b[NB];
    k->act_prep[HR_Q4_1](x, b, NB * HR_QK);
    for (int i = 0; i < NB; i++) {
        const float *xb = x + i * HR_QK;
        float amax = 0;
        int sum = 0;
        for (int j = 0; j < HR_QK; j++) amax = fmaxf(amax, fabsf(xb[j]));
        for (int j = 0; j < HR_QK; j++) {
            double want = amax > 0 ? (double)xb[j] * 127.0 / amax : 0.0;
            CHECKF(fabs(b[i].qs[j] - want) <= 0.5 + 1e-5, "%s q8_1 block %d elem %d: %d for %g", k->name, i, j, b[i].qs[j], want);
            if (i == 3 && j != 31) CHECKF(b[i].qs[j] == (int)nearbyintf(xb[j]), "%s q8_1 tie %g -> %d", k->name, xb[j], b[i].qs[j]);
            sum += b[i].qs[j];
        }
        const float d = amax / 127.f;
        CHECKF(b[i].d == hr_f32_to_f16(d), "%s q8_1 block %d: d", k->name, i);
        CHECKF(b[i].s == hr_f32_to_f16(d * (float)sum), "%s q8_1 block %d: s %g vs d*sum %g", k->name, i,
               hr_f16_to_f32(b[i].s), d * (float)sum);
    }
    CHECK(b[2].d == 0 && b[2].s == 0);
}

/* Q8_K (ggml's quantize_row_q8_K_ref): scale from the element of largest magnitude, which
 * becomes -127; q = x * (-127/max) to nearest (ties to even), at most 127; d = 1/iscale;
 * bsums the sums of 16. An all-zero block is all zero. */
static void check_prep_q8_K(const hr_kernels *k, hr_rng *r) {
    if (!k->act_prep[HR_Q4_K]) return;
    enum { NB = 4 };
    float x[NB * HR_QK_K];
    fill(r, x, NB * HR_QK_K);
    for (int j = 0; j < HR_QK_K; j++) x[HR_QK_K + j] = 0.0f;
    for (int j = 0; j < HR_QK_K; j++) x[2 * HR_QK_K + j] = (float)(j % 50) * 0.5f * ((j & 64) ? -1 : 1);
    x[2 * HR_QK_K + 77] = -127.0f; /* iscale = 1: exact halves, ties to even */
    x[3 * HR_QK_K + 5] = 50.0f, x[3 * HR_QK_K + 9] = -50.0f; /* a tie of magnitudes: the first wins */
    hr_block_q8_K b[NB];
    memset(b, 0x5a, sizeof b);
    k->act_prep[HR_Q4_K](x, b, NB * HR_QK_K);
    for (int i = 0; i < NB; i++) {
        const float *xb = x + i * HR_QK_K;
        int im = 0;
        for (int j = 1; j < HR_QK_K; j++) im = fabsf(xb[j]) > fabsf(xb[im]) ? j : im;
        if (xb[im] == 0.0f) {
            CHECK(b[i].d == 0.0f);
            for (int j = 0; j < HR_QK_K; j++) CHECK(b[i].qs[j] == 0);
            for (int j = 0; j < 16; j++) CHECK(b[i].bsums[j] == 0);
            continue;
        }
        CHECKF(b[i].qs[im] == -127, "%s q8_K block %d: max elem -> %d", k->name, i, b[i].qs[im]);
        const double iscale = -127.0 / xb[im];
        CHECKF(fabs(b[i].d * iscale - 1.0) < 1e-6, "%s q8_K block %d: d %g", k->name, i, b[i].d);
        for (int j = 0; j < HR_QK_K; j++) {
            double want = (double)xb[j] * iscale;
            CHECKF(fabs(b[i].qs[j] - want) <= 0.5 + 1e-5 && b[i].qs[j] <= 127, "%s q8_K block %d elem %d: %d for %g", k->name, i, j, b[i].qs[j], want);
            if (i == 2) CHECKF(b[i].qs[j] == (int)nearbyintf(-xb[j] * (-127.0f / xb[im]) * -1.0f),
                               "%s q8_K tie %g -> %d", k->name, xb[j], b[i].qs[j]);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += b[i].qs[16 * g + j];
            CHECKF(b[i].bsums[g] == sum, "%s q8_K block %d bsum %d", k->name, i, g);
        }
    }
}

/* Activations with NaN and infinities (what NaN weights make): every prep completes with a
 * defined result (the sanitizer pass checks float-to-int conversions), and blocks whose
 * inputs are all finite get the scalar twin's bytes. NaN blocks may differ between twins:
 * SIMD max instructions order NaN operands in their own way. */
static void check_prep_nonfinite(const hr_kernels *k) {
    const uint32_t wts[] = {HR_Q8_0, HR_Q4_1, HR_Q4_K};
    enum { N = 1024 }; /* Q8_K: blocks 2 and 3 finite */
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 19) - 9.0f;
    x[3] = NAN, x[40] = -NAN, x[77] = INFINITY, x[300] = -INFINITY;
    for (int i = 256; i < 288; i++) x[i] = NAN; /* a block that is all NaN */
    for (size_t w = 0; w < sizeof wts / sizeof wts[0]; w++) {
        _Alignas(64) uint8_t a[N * 2], b[N * 2]; /* blocks hold floats (Q8_K d) */
        const int64_t be = wts[w] == HR_Q4_K ? HR_QK_K : HR_QK;
        const size_t bb = hr_act_bytes(wts[w], be);
        memset(a, 0x5a, sizeof a), memset(b, 0x5a, sizeof b);
        k->act_prep[wts[w]](x, a, N);
        hr_kernels_scalar()->act_prep[wts[w]](x, b, N);
        for (int64_t blk = 0; blk < N / be; blk++) {
            bool finite = true;
            for (int64_t i = blk * be; i < (blk + 1) * be; i++) finite = finite && isfinite(x[i]);
            if (finite)
                CHECKF(memcmp(a + blk * bb, b + blk * bb, bb) == 0, "%s prep for %s: finite block %lld differs",
                       k->name, hr_type_name(wts[w]), (long long)blk);
        }
    }
}

/* MXFP4 scales at the ends of E8M0: e = 0 and 1 give a subnormal F32 scale (2^-128,
 * 2^-127), which SIMD kernels build differently from the plain exponent shift. Rows whose
 * blocks all share one e, x scaled so the dot stays a normal float: vec_dot against the
 * dequantized reference with no absolute floor, rows4/rows2 bit-identical to vec_dot. */
static void check_mxfp4_exponents(const hr_kernels *k, hr_rng *r) {
    if (!k->vec_dot[HR_MXFP4]) return;
    enum { N = 4096 + 96, NB = N / HR_QK };
    static const uint8_t es[] = {0, 1, 2, 3, 64, 127, 128, 190};
    const size_t wb = hr_row_bytes(HR_MXFP4, N);
    uint8_t *w = malloc(4 * wb), *xq = malloc(hr_act_bytes(HR_MXFP4, N));
    float *x = malloc(N * sizeof *x);
    for (size_t ei = 0; ei < sizeof es / sizeof es[0]; ei++) {
        for (int i = 0; i < 4; i++) {
            kt_weight_row(r, HR_MXFP4, w + i * wb, N);
            for (int b = 0; b < NB; b++) w[i * wb + b * sizeof(hr_block_mxfp4)] = es[ei];
        }
        const float xs = es[ei] < 8 ? 3.0e5f : 1.0f; /* d_x = F16(amax / 127) must stay finite */
        for (int i = 0; i < N; i++) x[i] = hr_rng_normal(r) * xs;
        k->act_prep[HR_MXFP4](x, xq, N);
        double mag;
        const double ref = kt_ref_dot(HR_MXFP4, w, xq, N, &mag);
        float s = NAN;
        k->vec_dot[HR_MXFP4](N, &s, w, xq);
        CHECKF(fabs(s - ref) <= 2.0 * (N / 8 + 32) * 0x1p-24 * mag && mag > 0, "%s mxfp4 e=%u: %.9g vs ref %.9g",
               k->name, es[ei], s, ref);
        float y[4];
        hr_tile_fn fs[2] = {hr_kernels_ext_of(k)->rows4[HR_MXFP4], hr_kernels_ext_of(k)->rows2[HR_MXFP4]};
        for (int f = 0; f < 2; f++) {
            if (!fs[f]) continue;
            fs[f](N, w, wb, xq, 0, y, 0);
            for (int i = 0; i < (f ? 2 : 4); i++) {
                float si;
                k->vec_dot[HR_MXFP4](N, &si, w + i * wb, xq);
                CHECKF(memcmp(&si, &y[i], 4) == 0, "%s mxfp4 e=%u rows%d row %d: %.9g vs %.9g", k->name, es[ei],
                       f ? 2 : 4, i, y[i], si);
            }
        }
    }
    free(w); free(xq); free(x);
}

int main(void) {
    const hr_kernels *all[] = {hr_kernels_scalar(), hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx(), hr_kernels_neon()};
    hr_rng r = {2024};
    for (size_t v = 0; v < sizeof all / sizeof all[0]; v++) {
        const hr_kernels *k = all[v];
        if (!k) continue;
        printf("checking %s\n", k->name);
        check_q8_ties(k);
        check_prep_q8_1(k, &r);
        check_prep_q8_K(k, &r);
        check_prep_nonfinite(k);
        check_mxfp4_exponents(k, &r);
        for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
            uint32_t t = k_types[ti];
            if (is_k256(t) && v != 0 && !k->vec_dot[t]) {
                printf("  %s: no %s kernel\n", k->name, hr_type_name(t));
                continue;
            }
            CHECKF(k->vec_dot[t] && k->act_prep[t], "%s lacks %s", k->name, hr_type_name(t));
            if (!k->vec_dot[t]) continue;
            const int64_t *lens = is_k256(t) ? k_len_k256 : kt_block(t) > 1 ? k_len_block : k_len_plain;
            size_t nl = is_k256(t) ? sizeof k_len_k256 / sizeof *k_len_k256
                      : kt_block(t) > 1 ? sizeof k_len_block / sizeof *k_len_block
                                        : sizeof k_len_plain / sizeof *k_len_plain;
            for (size_t li = 0; li < nl; li++) {
                for (int rep = 0; rep < 3; rep++) check_dot(k, t, lens[li], &r);
                check_tile(k, t, lens[li], &r);
            }
        }
    }
    /* the override picks the named table; an unknown name falls back to the best */
    setenv("HEARTH_KERNELS", "scalar", 1);
    CHECK(strcmp(hr_kernels_best()->name, "scalar") == 0);
    setenv("HEARTH_KERNELS", "bogus", 1);
    const hr_kernels *b = hr_kernels_best();
    unsetenv("HEARTH_KERNELS");
    CHECK(b == hr_kernels_best());
    CHECK(hr_act_bytes(HR_Q4_0, 64) == 68 && hr_act_bytes(HR_F16, 7) == 14 && hr_act_bytes(HR_I32, 8) == 0);
    CHECK(hr_act_bytes(HR_Q5_0, 64) == 68 && hr_act_bytes(HR_IQ4_NL, 32) == 34 && hr_act_bytes(HR_MXFP4, 96) == 102);
    CHECK(hr_act_bytes(HR_Q4_1, 64) == 72 && hr_act_bytes(HR_Q5_1, 32) == 36);
    CHECK(hr_act_bytes(HR_Q4_K, 512) == 584 && hr_act_bytes(HR_Q2_K, 256) == 292 && hr_act_bytes(HR_IQ4_XS, 256) == 292);
    CHECK(hr_act_bytes(HR_Q8_K, 256) == 0 && hr_act_bytes(HR_Q8_1, 32) == 0); /* activation types, not weights */
    return TEST_END();
}
