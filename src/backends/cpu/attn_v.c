#include "attn_v.h"
#include <string.h>
#include "formats/types.h"

/* Columns [d0, d1) of the sum: the loop order of the SIMD twin's tail, and of its lanes. */
static void wsum_cols(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t d0, int32_t d1,
                      int f16) {
    const char *v = V;
    for (int32_t d = d0; d < d1; d++) out[d] = 0.0f;
    for (int32_t p = 0; p < n; p++, v += vs) {
        if (f16) {
            const uint16_t *r = (const uint16_t *)v;
            for (int32_t d = d0; d < d1; d++) out[d] += w[p] * hr_f16_to_f32(r[d]);
        } else {
            const float *r = (const float *)v;
            for (int32_t d = d0; d < d1; d++) out[d] += w[p] * r[d];
        }
    }
}

void hr_attn_wsum_c(float *out, const float *w, const void *V, size_t vs, int32_t n, int32_t hd, int f16) {
    wsum_cols(out, w, V, vs, n, 0, hd, f16);
}

void hr_attn_wsum_grp_c(float *out, size_t os, const float *w, size_t ws, const void *V, size_t vs, const int32_t *n,
                        int32_t hd, int f16) {
    for (int i = 0; i < HR_WSUM_GRP; i++) hr_attn_wsum_c(out + i * os, w + i * ws, V, vs, n[i], hd, f16);
}
