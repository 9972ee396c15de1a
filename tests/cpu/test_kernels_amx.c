/* The AMX table's Q8_0 and Q4_0 kernels (kernels_amx.c) against the scalar table's vec_dot,
 * bit for bit: vec_dot, rows4, gather4, the 2 x 4 tile and the 16 x 16 AMX tile over panels
 * of every token count, on lengths with odd and even block counts and on every int8 value
 * (-128 included, which sign tricks get wrong). Skips with one line where the CPU or the
 * compiler has no AMX. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_impl.h"
#include "testutil.h"

static uint16_t rand_scale(hr_rng *r) { return hr_f32_to_f16((hr_rng_uniform(r) + 0.05f) * 0.02f); }

/* Rows of random quants (every byte value) and moderate F16 scales. */
static void fill_rows(hr_rng *r, uint32_t t, char *w, size_t rb, int64_t rows, int64_t n) {
    for (int64_t i = 0; i < rows; i++) {
        char *row = w + i * rb;
        for (size_t k = 0; k < rb; k++) row[k] = (char)(hr_rng_next(r) >> 56);
        const size_t bs = t == HR_Q8_0 ? sizeof(hr_block_q8_0) : sizeof(hr_block_q4_0);
        for (int64_t b = 0; b < n / HR_QK; b++) {
            const uint16_t d = rand_scale(r);
            memcpy(row + b * bs, &d, 2);
        }
    }
}

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void check_type(const hr_kernels_ext *x, uint32_t t, int64_t n, hr_rng *r) {
    const hr_kernels *ref = hr_kernels_scalar();
    const size_t rb = hr_row_bytes(t, (uint64_t)n), xs = (hr_act_bytes(t, n) + 63) & ~(size_t)63;
    enum { ROWS = 37, TOK = 35 };
    char *w = malloc(rb * ROWS);
    char *xq = aligned_alloc(64, xs * TOK);
    float *want = malloc(sizeof(float) * ROWS * TOK), y[8];
    fill_rows(r, t, w, rb, ROWS, n);
    /* activations as raw Q8_0 blocks: every quant value, not only what act_prep makes */
    fill_rows(r, HR_Q8_0, xq, xs, TOK, n);
    for (int c = 0; c < TOK; c++)
        for (int i = 0; i < ROWS; i++) ref->vec_dot[t](n, &want[c * ROWS + i], w + i * rb, xq + c * xs);
    const char *name = hr_type_name(t);
    int bad = 0;
    for (int c = 0; c < TOK; c++)
        for (int i = 0; i < ROWS; i++) {
            x->k.vec_dot[t](n, y, w + i * rb, xq + c * xs);
            bad += !same(y[0], want[c * ROWS + i]);
        }
    CHECKF(bad == 0, "%s n=%lld: vec_dot differs from the scalar twin in %d results", name, (long long)n, bad);
    bad = 0;
    for (int i = 0; i + 4 <= ROWS; i++) {
        x->rows4[t](n, w + i * rb, rb, xq, 0, y, 0);
        for (int k = 0; k < 4; k++) bad += !same(y[k], want[i + k]);
        const void *g[4] = {w + (i + 3) * rb, w + i * rb, w + (ROWS - 1 - i) * rb, w + (i + 1) * rb};
        x->gather4[t](n, g, g, xq + xs, y);
        const int gi[4] = {i + 3, i, ROWS - 1 - i, i + 1};
        for (int k = 0; k < 4; k++) bad += !same(y[k], want[ROWS + gi[k]]);
    }
    CHECKF(bad == 0, "%s n=%lld: rows4/gather4 differ in %d results", name, (long long)n, bad);
    bad = 0;
    for (int i = 0; x->rows16[t] && i + 16 <= ROWS; i += 7) {
        float y16[16];
        x->rows16[t](n, w + i * rb, rb, xq + 2 * xs, 0, y16, 0);
        for (int k = 0; k < 16; k++) bad += !same(y16[k], want[2 * ROWS + i + k]);
    }
    CHECKF(bad == 0, "%s n=%lld: rows16 differs in %d results", name, (long long)n, bad);
    bad = 0;
    for (int i = 0; i + 2 <= ROWS; i += 5)
        for (int c = 0; c + 4 <= TOK; c += 3) {
            x->tile[t](n, w + i * rb, rb, xq + c * xs, xs, y, 2);
            for (int u = 0; u < 4; u++)
                for (int k = 0; k < 2; k++) bad += !same(y[u * 2 + k], want[(c + u) * ROWS + i + k]);
        }
    CHECKF(bad == 0, "%s n=%lld: the 2 x 4 tile differs in %d results", name, (long long)n, bad);
    /* tile16 over panels of n_x tokens, for every n_x up to two panels; rows at an offset,
     * tokens too */
    const size_t pb = (x->tile16_bytes[t](n) + 63) & ~(size_t)63;
    char *panel = aligned_alloc(64, 2 * pb);
    float *yt = malloc(sizeof(float) * (32 * 16 + 8));
    bad = 0;
    for (int nx = 1; nx <= TOK - 2 && nx <= 32; nx++) {
        const int c0 = nx % 3, r0 = nx % 7;
        for (int p = 0; 16 * p < nx; p++)
            x->tile16_prep[t](xq + (c0 + 16 * p) * xs, xs, nx - 16 * p < 16 ? nx - 16 * p : 16, panel + p * pb, n);
        for (int k = 0; k < 32 * 16 + 8; k++) yt[k] = -1.0f;
        x->tile16[t](n, w + r0 * rb, rb, panel, pb, yt, 16, nx);
        for (int u = 0; u < nx; u++)
            for (int k = 0; k < 16; k++) bad += !same(yt[u * 16 + k], want[(c0 + u) * ROWS + r0 + k]);
        for (int k = nx * 16; k < 32 * 16 + 8; k++) bad += yt[k] != -1.0f; /* nothing past n_x */
    }
    CHECKF(bad == 0, "%s n=%lld: tile16 differs in %d results", name, (long long)n, bad);
    free(panel), free(yt), free(w), free(xq), free(want);
}

int main(void) {
    const hr_kernels *k = hr_kernels_amx();
    if (!k) {
        printf("skip: no AMX table on this CPU or compiler\n");
        return 0;
    }
    CHECK(strcmp(k->name, "amx") == 0);
    const hr_kernels_ext *x = hr_kernels_ext_of(k);
    hr_rng r = {7};
    const int64_t lens[] = {32, 64, 96, 160, 224, 256, 288, 1056, 2080, 8224, 8256};
    const uint32_t types[] = {HR_Q8_0, HR_Q4_0};
    for (size_t ti = 0; ti < 2; ti++) {
        const uint32_t t = types[ti];
        CHECKF(x->tile16[t] && x->tile16_prep[t] && x->rows4[t] && x->gather4[t] && x->tile[t], "%s: missing kernel",
               hr_type_name(t));
        CHECKF(t != HR_Q4_0 || x->rows16[t], "q4_0: no rows16");
        if (!x->tile16[t]) continue;
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) check_type(x, t, lens[i], &r);
    }
    return TEST_END();
}
