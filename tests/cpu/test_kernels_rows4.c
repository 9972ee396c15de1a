/* The 4-row decode kernels (rows4, and rows4_x over the re-laid row) of every kernel table
 * against vec_dot of the same pairs, bit for bit: matmul mixes rows4, rows2 and vec_dot at chunk edges, and a
 * token's result must not depend on which one computed it. Lengths cover whole 8-block
 * groups, ragged tails, and rows that are not adjacent (a stride past the row). */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "kernel_rows.h"
#include "testutil.h"

static const uint32_t k_types[] = {HR_F32,  HR_F16,  HR_BF16, HR_Q8_0, HR_Q4_0,   HR_Q4_1,
                                   HR_Q5_0, HR_Q5_1, HR_IQ4_NL, HR_MXFP4, HR_Q2_K, HR_Q3_K,
                                   HR_Q4_K, HR_Q5_K, HR_Q6_K, HR_IQ4_XS};
static const int64_t k_len_block[] = {32, 96, 256, 288, 4096, 4096 + 224};
static const int64_t k_len_k256[] = {256, 512, 768, 2304, 4096, 4096 + 256};
static const int64_t k_len_plain[] = {1, 17, 33, 256, 1023, 4096 + 33};

static void fill(hr_rng *r, float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = hr_rng_normal(r) * (i % 7 == 0 ? 3.0f : 1.0f);
}

static void check_rows4(const hr_kernels *k, uint32_t t, int64_t n, hr_rng *r) {
    hr_tile_fn rows4 = hr_kernels_ext_of(k)->rows4[t];
    if (!rows4) return;
    size_t wb = hr_row_bytes(t, (uint64_t)n), ws = wb + 10; /* odd stride catches stride bugs */
    char *w = malloc(ws * 4), *xq = malloc(hr_act_bytes(t, n) + 64);
    float *x = malloc(n * sizeof *x);
    for (int i = 0; i < 4; i++) kt_weight_row(r, t, w + i * ws, n);
    fill(r, x, n);
    k->act_prep[t](x, xq, n);
    float y[5] = {-1234.5f, -1234.5f, -1234.5f, -1234.5f, -1234.5f};
    rows4(n, w, ws, xq, 0, y, 0);
    for (int i = 0; i < 4; i++) {
        float s;
        k->vec_dot[t](n, &s, w + i * ws, xq);
        CHECKF(memcmp(&s, &y[i], 4) == 0, "%s rows4 %s n=%lld row %d: %.9g vs vec_dot %.9g", k->name,
               hr_type_name(t), (long long)n, i, y[i], s);
    }
    CHECK(y[4] == -1234.5f);
    hr_tile_fn rows4_x = hr_kernels_ext_of(k)->rows4_x[t];
    if (rows4_x) { /* over the re-laid row: vec_dot's bits too */
        const size_t xb = (hr_kernels_ext_of(k)->tile_xbytes[t](n) + 63) & ~(size_t)63;
        void *xt = aligned_alloc(64, xb);
        hr_kernels_ext_of(k)->tile_xprep[t](xq, xt, n);
        float z[5] = {-1234.5f, -1234.5f, -1234.5f, -1234.5f, -1234.5f};
        rows4_x(n, w, ws, xt, 0, z, 0);
        for (int i = 0; i < 4; i++)
            CHECKF(memcmp(&z[i], &y[i], 4) == 0, "%s rows4_x %s n=%lld row %d: %.9g vs rows4 %.9g", k->name, hr_type_name(t),
                   (long long)n, i, z[i], y[i]);
        CHECK(z[4] == -1234.5f);
        free(xt);
    }
    free(w); free(xq); free(x);
}

int main(void) {
    hr_rng r = {77};
    const hr_kernels *tabs[] = {hr_kernels_scalar(), hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx(), hr_kernels_neon()};
    int tested = 0;
    for (size_t ki = 0; ki < sizeof tabs / sizeof tabs[0]; ki++) {
        const hr_kernels *k = tabs[ki];
        if (!k) continue;
        for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
            uint32_t t = k_types[ti];
            const int64_t *lens = kt_block(t) == HR_QK_K ? k_len_k256 : kt_block(t) > 1 ? k_len_block : k_len_plain;
            for (int li = 0; li < 6; li++) check_rows4(k, t, lens[li], &r);
            tested += hr_kernels_ext_of(k)->rows4[t] != NULL;
        }
    }
#if defined(__x86_64__)
    /* the AVX2 table has rows4 for every type but (maybe) the K-quants and IQ4_XS */
    if (hr_kernels_avx2()) CHECK(tested >= 10);
#endif
    return TEST_END();
}
