/* Attention's weighted sum of value rows: the plain C against the loop attention.c had
 * (written out here), and the AVX2 and AVX-512 twins and every kernel table's entry against
 * the plain C, bit for bit, at head sizes around the 8-, 16-, 64- and 128-column blocks and
 * row counts 1 to 300 (several 32-row chunks), F16 (with subnormals, infinities' neighbours,
 * signed zeros) and F32 rows, strided as a cache. The group form (attn_wsum_grp: several
 * tokens over one V, each its own row count) against the plain C per token, likewise. */
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/attn_v.h"
#include "backends/cpu/kernels.h"
#include "formats/types.h"
#include "testutil.h"

static void reference(float *out, const float *w, const char *V, size_t vs, int32_t n, int32_t hd, int f16) {
    memset(out, 0, sizeof(float) * (size_t)hd);
    for (int32_t p = 0; p < n; p++)
        for (int32_t d = 0; d < hd; d++) {
            const char *r = V + (size_t)p * vs;
            out[d] += w[p] * (f16 ? hr_f16_to_f32(((const uint16_t *)r)[d]) : ((const float *)r)[d]);
        }
}

static int same_bits(const float *a, const float *b, int32_t n) { return memcmp(a, b, sizeof(float) * (size_t)n) == 0; }

enum { MAXD = 256, MAXN = 300, PADD = 24, OS = MAXD + 5, WS = MAXN + 3 };

/* The group's tokens see n + off[i] rows (ascending as in a prompt, or not), each with its
 * own weights; every token's row equals the plain C's. */
static void check_grp(const char *name, hr_attn_wsum_grp_fn fn, const float *wbase, const char *V, size_t vs, int32_t n,
                      int32_t hd, int f16) {
    static const int32_t offs[][HR_WSUM_GRP] = {{0, 1, 2, 3}, {3, 0, 2, 0}, {0, 0, 0, 0}};
    static float w[HR_WSUM_GRP * WS], out[HR_WSUM_GRP * OS];
    float ref[MAXD];
    for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
        int32_t ns[HR_WSUM_GRP];
        for (int i = 0; i < HR_WSUM_GRP; i++) {
            ns[i] = n + offs[o][i] > MAXN ? MAXN : n + offs[o][i];
            for (int32_t p = 0; p < WS; p++) w[i * WS + p] = wbase[(p + 37 * i) % MAXN] * (i & 1 ? -0.5f : 1.0f);
        }
        for (int i = 0; i < HR_WSUM_GRP * OS; i++) out[i] = -7.0f;
        fn(out, OS, w, WS, V, vs, ns, hd, f16);
        for (int i = 0; i < HR_WSUM_GRP; i++) {
            reference(ref, w + i * WS, V, vs, ns[i], hd, f16);
            CHECKF(same_bits(ref, out + i * OS, hd), "%s group differs: f16 %d hd %d token %d of rows %d", name, f16, hd, i,
                   ns[i]);
            CHECKF(out[i * OS + hd] == -7.0f, "%s group wrote past token %d's row (hd %d)", name, i, hd);
        }
    }
}

int main(void) {
    static const int32_t hds[] = {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 72, 80, 127, 128, 129, 136, 144, 200, 256};
    static const int32_t ns[] = {1, 2, 5, 31, 32, 33, 64, 300};
    uint16_t *vh = malloc(sizeof(uint16_t) * MAXN * (MAXD + PADD));
    float *vf = malloc(sizeof(float) * MAXN * (MAXD + PADD)), w[MAXN];
    float ref[MAXD], c[MAXD], simd[MAXD], any[MAXD];
    CHECK(vh && vf);
    if (!vh || !vf) return TEST_END();
    unsigned s = 7;
    for (int i = 0; i < MAXN * (MAXD + PADD); i++) {
        s = s * 1103515245u + 12345u;
        const unsigned r = s >> 8;
        /* mostly ordinary values, some subnormals, zeros of both signs, large magnitudes */
        uint16_t h = hr_f32_to_f16(((int)(r % 20001) - 10000) / 997.0f);
        if (r % 17 == 0) h = (uint16_t)(r & 0x83ff);
        if (r % 29 == 0) h = (uint16_t)((r & 0x8000) | 0x7bff);
        vh[i] = h;
        vf[i] = ((int)(r % 40001) - 20000) / 313.0f;
    }
    for (int p = 0; p < MAXN; p++) w[p] = (float)((p * 7919) % 1000) / 1000.0f * (p % 3 ? 1.0f : -1.0f);
    int simd_ok = 0, avx512_ok = 0;
#if defined(__x86_64__)
    simd_ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    avx512_ok = __builtin_cpu_supports("avx512f");
#endif
    const hr_kernels *tables[] = {hr_kernels_scalar(), hr_kernels_avx2(), hr_kernels_avxvnni(), hr_kernels_avx512(), hr_kernels_amx(), hr_kernels_neon()};
    for (int f16 = 0; f16 < 2; f16++)
        for (size_t a = 0; a < sizeof hds / sizeof hds[0]; a++)
            for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
                const int32_t hd = hds[a], n = ns[b];
                const size_t vs = (size_t)(hd + PADD) * (f16 ? 2 : 4);
                const char *V = f16 ? (const char *)vh : (const char *)vf;
                reference(ref, w, V, vs, n, hd, f16);
                hr_attn_wsum_c(c, w, V, vs, n, hd, f16);
                CHECKF(same_bits(ref, c, hd), "plain C differs: f16 %d hd %d n %d", f16, hd, n);
                for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
                    if (!tables[t]) continue;
                    CHECKF(tables[t]->attn_wsum != NULL, "table %s has no attn_wsum", tables[t]->name);
                    if (!tables[t]->attn_wsum) continue;
                    tables[t]->attn_wsum(any, w, V, vs, n, hd, f16);
                    CHECKF(same_bits(ref, any, hd), "table %s differs: f16 %d hd %d n %d", tables[t]->name, f16, hd, n);
                    CHECKF(tables[t]->attn_wsum_grp != NULL, "table %s has no attn_wsum_grp", tables[t]->name);
                    if (tables[t]->attn_wsum_grp) check_grp(tables[t]->name, tables[t]->attn_wsum_grp, w, V, vs, n, hd, f16);
                }
#if defined(__x86_64__)
                if (simd_ok) {
                    hr_attn_wsum_avx2(simd, w, V, vs, n, hd, f16);
                    CHECKF(same_bits(ref, simd, hd), "AVX2 differs: f16 %d hd %d n %d", f16, hd, n);
                    check_grp("AVX2", hr_attn_wsum_grp_avx2, w, V, vs, n, hd, f16);
                }
                if (avx512_ok) {
                    hr_attn_wsum_avx512(simd, w, V, vs, n, hd, f16);
                    CHECKF(same_bits(ref, simd, hd), "AVX-512 differs: f16 %d hd %d n %d", f16, hd, n);
                    check_grp("AVX-512", hr_attn_wsum_grp_avx512, w, V, vs, n, hd, f16);
                }
#endif
            }
    free(vh);
    free(vf);
    return TEST_END();
}
