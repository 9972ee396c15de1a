/* Weight rows and the dequantizer-only reference dot shared by the CPU kernel tests. */
#include "kernel_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where a block keeps its F16 scale fields and (for types with a min term) its quant
 * bytes, which kt_ref_dot zeroes to read the min part back through the dequantizer. */
typedef struct { uint32_t t; int d_off, m_off, q_off, q_end; } layout;
static const layout k_layouts[] = {
    {HR_Q4_1, 0, 2, 4, 20},  {HR_Q5_0, 0, -1, 0, 0},  {HR_Q5_1, 0, 2, 4, 24},
    {HR_IQ4_NL, 0, -1, 0, 0}, {HR_MXFP4, -1, -1, 0, 0}, {HR_Q2_K, 80, 82, 16, 80},
    {HR_Q3_K, 108, -1, 0, 0}, {HR_Q4_K, 0, 2, 16, 144}, {HR_Q5_K, 0, 2, 16, 176},
    {HR_Q6_K, 208, -1, 0, 0}, {HR_IQ4_XS, 0, -1, 0, 0},
};

static const layout *layout_of(uint32_t t) {
    for (size_t i = 0; i < sizeof k_layouts / sizeof k_layouts[0]; i++)
        if (k_layouts[i].t == t) return &k_layouts[i];
    return NULL;
}

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
    const layout *L = layout_of(t);
    if (!L) {
        float *tmp = malloc((size_t)n * sizeof *tmp);
        for (int64_t i = 0; i < n; i++) tmp[i] = hr_rng_normal(r) * (i % 5 == 0 ? 4.0f : 1.0f);
        hr_quant_row(t, tmp, w, n);
        free(tmp);
        return;
    }
    const size_t bb = hr_type_block_bytes(t), nb = (size_t)(n / kt_block(t));
    uint8_t *p = w;
    for (size_t i = 0; i < bb * nb; i++) p[i] = (uint8_t)(hr_rng_next(r) >> 56);
    for (size_t b = 0; b < nb; b++, p += bb) {
        if (t == HR_MXFP4) p[0] = (uint8_t)(120 + hr_rng_next(r) % 12); /* 2^-8 .. 2^3 */
        if (L->d_off >= 0) put_f16(p + L->d_off, (hr_rng_uniform(r) * 2 - 1) * 0.02f);
        if (L->m_off >= 0) put_f16(p + L->m_off, (hr_rng_uniform(r) * 2 - 1) * 0.05f);
    }
}

double kt_ref_dot(uint32_t t, const void *w, const void *xq, int64_t n, double *mag) {
    const layout *L = layout_of(t);
    const int has_min = L && L->m_off >= 0;
    float *wf = malloc((size_t)n * sizeof *wf), *xf = malloc((size_t)n * sizeof *xf);
    float *off = calloc((size_t)n, sizeof *off);
    hr_dequant_row(t, w, wf, n);
    hr_dequant_row(kt_act_type(t), xq, xf, n);
    const size_t bb = hr_type_block_bytes(t), nb = (size_t)(n / kt_block(t));
    if (has_min) { /* the min part: the same blocks with every quant zero */
        uint8_t *z = malloc(bb * nb);
        memcpy(z, w, bb * nb);
        for (size_t b = 0; b < nb; b++) memset(z + b * bb + L->q_off, 0, (size_t)(L->q_end - L->q_off));
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
