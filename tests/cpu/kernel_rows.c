/* Weight rows and the dequantizer-only reference dot shared by the CPU kernel tests. */
#include "kernel_rows.h"

#include <stdbool.h>
#include <stddef.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "randw.h"

/* The quant bytes [q0, q1) of a block of the types with a min term, which kt_ref_dot zeroes
 * to read the min part back through the dequantizer; false for the others. */
static bool min_quants(uint32_t t, size_t *q0, size_t *q1) {
    switch (t) {
    case HR_Q4_1: *q0 = offsetof(hr_block_q4_1, qs), *q1 = sizeof(hr_block_q4_1); return true;
    case HR_Q5_1: *q0 = offsetof(hr_block_q5_1, qh), *q1 = sizeof(hr_block_q5_1); return true;
    case HR_Q2_K: *q0 = offsetof(hr_block_q2_K, qs), *q1 = offsetof(hr_block_q2_K, d); return true;
    case HR_Q4_K: *q0 = offsetof(hr_block_q4_K, qs), *q1 = sizeof(hr_block_q4_K); return true;
    case HR_Q5_K: *q0 = offsetof(hr_block_q5_K, qh), *q1 = sizeof(hr_block_q5_K); return true;
    default: return false;
    }
}

/* Types whose test rows are random bytes with set scales (the older Q8_0/Q4_0 and the
 * float types come from the quantizer). */
static bool random_bytes(uint32_t t) { return hr_type_is_quant(t) && t != HR_Q8_0 && t != HR_Q4_0; }

uint32_t kt_act_type(uint32_t t) {
    switch (t) {
    case HR_Q8_0: case HR_Q4_0: case HR_Q5_0: case HR_IQ4_NL: case HR_MXFP4: return HR_Q8_0;
    case HR_Q4_1: case HR_Q5_1: return HR_Q8_1;
    case HR_Q2_K: case HR_Q3_K: case HR_Q4_K: case HR_Q5_K: case HR_Q6_K: case HR_IQ4_XS: return HR_Q8_K;
    default: return t;
    }
}

int64_t kt_block(uint32_t t) { return (int64_t)hr_type_block_elems(t); }

static void put_f16(uint8_t *p, float v) {
    uint16_t h = hr_f32_to_f16(v);
    memcpy(p, &h, 2);
}

void kt_weight_row(hr_rng *r, uint32_t t, void *w, int64_t n) {
    if (!random_bytes(t)) {
        float *tmp = malloc((size_t)n * sizeof *tmp);
        for (int64_t i = 0; i < n; i++) tmp[i] = hr_rng_normal(r) * (i % 5 == 0 ? 4.0f : 1.0f);
        hr_quant_row(t, tmp, w, n);
        free(tmp);
        return;
    }
    const size_t bb = hr_type_block_bytes(t), nb = (size_t)(n / kt_block(t));
    size_t off[2] = {0, 0};
    const int ns = randw_scale_offsets(t, off); /* d, and the min's scale where there is one */
    uint8_t *p = w;
    for (size_t i = 0; i < bb * nb; i++) p[i] = (uint8_t)(hr_rng_next(r) >> 56);
    for (size_t b = 0; b < nb; b++, p += bb) {
        if (t == HR_MXFP4) p[0] = (uint8_t)(120 + hr_rng_next(r) % 12); /* 2^-8 .. 2^3 */
        if (ns > 0) put_f16(p + off[0], (hr_rng_uniform(r) * 2 - 1) * 0.02f);
        if (ns > 1) put_f16(p + off[1], (hr_rng_uniform(r) * 2 - 1) * 0.05f);
    }
}

double kt_ref_dot(uint32_t t, const void *w, const void *xq, int64_t n, double *mag) {
    size_t q0 = 0, q1 = 0;
    const bool has_min = min_quants(t, &q0, &q1);
    float *wf = malloc((size_t)n * sizeof *wf), *xf = malloc((size_t)n * sizeof *xf);
    float *off = calloc((size_t)n, sizeof *off);
    hr_dequant_row(t, w, wf, n);
    hr_dequant_row(kt_act_type(t), xq, xf, n);
    const size_t bb = hr_type_block_bytes(t), nb = (size_t)(n / kt_block(t));
    if (has_min) { /* the min part: the same blocks with every quant zero */
        uint8_t *z = malloc(bb * nb);
        memcpy(z, w, bb * nb);
        for (size_t b = 0; b < nb; b++) memset(z + b * bb + q0, 0, q1 - q0);
        hr_dequant_row(t, z, off, n);
        free(z);
    }
    double ref = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        ref += ((double)wf[i] - off[i]) * xf[i];
        m += (fabs(wf[i]) + 2 * fabs(off[i])) * fabs(xf[i]);
    }
    if (kt_act_type(t) == HR_Q8_1) {
        const hr_block_q8_1 *x = xq;
        for (size_t b = 0; b < nb; b++) {
            double v = (double)off[b * HR_QK] * hr_f16_to_f32(x[b].s);
            ref += v;
            m += fabs(v);
        }
    } else {
        for (int64_t i = 0; i < n; i++) ref += (double)off[i] * xf[i];
    }
    free(wf); free(xf); free(off);
    *mag = m;
    return ref;
}
