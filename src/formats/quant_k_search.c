/* Scale searches shared by the K-quants and IQ4_*: for a small group of values, pick a scale
 * (and for some types a minimum) and the integer levels that together approximate the group
 * best under a weighted error. They follow ggml's reference algorithms operation for
 * operation: the float expressions below keep ggml's association and int-to-float
 * conversions, because any reordering changes the last bit of a sum and with it, now and
 * then, a chosen level. */
#include <math.h>

#include "quant_internal.h"

/* Largest |x| and the signed value that has it (the first one on ties). */
static float signed_absmax(int n, const float *x, float *amax_out) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        if (a > amax) { amax = a; max = x[i]; }
    }
    *amax_out = amax;
    return max;
}

/* Weighted sums for levels clamped to [-nmax, nmax-1] at inverse scale iscale; writes the
 * offset levels into L when L is not NULL. */
static void sym_sums(int n, int nmax, const float *x, float iscale, int8_t *L, float *sx, float *s2) {
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = hr_qclamp(hr_qnearest(iscale * x[i]), -nmax, nmax - 1);
        if (L) L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    *sx = sumlx, *s2 = suml2;
}

float hr_qsearch_sym(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < HR_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float sumlx, suml2;
    sym_sums(n, nmax, x, -nmax / max, L, &sumlx, &suml2);
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    /* Nudge the level count by tenths either side; keep a candidate when it explains more of
     * the signal (sumlx^2 / suml2, the least-squares gain), compared without dividing. */
    for (int step = -9; step <= 9; step++) {
        if (step == 0) continue;
        const float iscale = -(nmax + 0.1f * step) / max;
        sym_sums(n, nmax, x, iscale, NULL, &sumlx, &suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            sym_sums(n, nmax, x, iscale, L, &sumlx, &suml2);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* One pass of coordinate descent: each level moves to the value that is optimal for it with
 * the others fixed, when that raises the gain sumlx^2 / suml2. Returns how many moved. */
static int refine_pass(int n, int nmax, const float *x, int8_t *L, float *sumlx, float *suml2) {
    int changed = 0;
    for (int i = 0; i < n; i++) {
        const float w = x[i] * x[i];
        float slx = *sumlx - w * x[i] * L[i];
        if (!(slx > 0)) continue;
        float sl2 = *suml2 - w * L[i] * L[i];
        const int nl = hr_qclamp(hr_qnearest(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (nl == L[i]) continue;
        slx += w * x[i] * nl;
        sl2 += w * nl * nl;
        if (sl2 > 0 && slx * slx * *suml2 > *sumlx * *sumlx * sl2) {
            L[i] = (int8_t)nl;
            *sumlx = slx, *suml2 = sl2;
            changed++;
        }
    }
    return changed;
}

float hr_qsearch_sym_refine(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < HR_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = hr_qclamp(hr_qnearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l; /* signed while refining, offset at the end */
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int pass = 0; pass < 5; pass++)
        if (!refine_pass(n, nmax, x, L, &sumlx, &suml2)) break;
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static float weighted_err(float diff, bool use_abs) { return use_abs ? fabsf(diff) : diff * diff; }

/* Weighted error of the fit value = scale * l + min against x, one loop per error kind. */
static float fit_err(int n, const float *x, const float *w, const float *lf, float scale, float min, bool use_abs) {
    float err = 0;
    if (use_abs)
        for (int i = 0; i < n; i++) err += w[i] * fabsf(scale * lf[i] + min - x[i]);
    else
        for (int i = 0; i < n; i++) {
            const float diff = scale * lf[i] + min - x[i];
            err += w[i] * (diff * diff);
        }
    return err;
}

float hr_qsearch_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                     float rmin, float rdelta, int nstep, bool use_abs) {
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0; /* the offset only ever shifts down: levels start at zero */
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_err = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)hr_qclamp(hr_qnearest(iscale * (x[i] - min)), 0, nmax);
        best_err += w[i] * weighted_err(scale * L[i] + min - x[i], use_abs);
    }
    if (nstep < 1) {
        *neg_min = -min;
        return scale;
    }
    /* For each candidate level grid, fit scale and min by weighted least squares (the 2x2
     * normal equations), clamp the min to <= 0, and keep the fit with the smallest error.
     * An accepted fit moves min, which the later grids start from (as in ggml), so the steps
     * stay sequential; x - min and the levels as floats are kept in arrays, the same values
     * the expressions would recompute. */
    uint8_t Laux[32];
    float xm[32], lf[32];
    for (int i = 0; i < n; i++) xm[i] = x[i] - min;
    for (int step = 0; step <= nstep; step++) {
        iscale = (rmin + rdelta * step + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = hr_qclamp(hr_qnearest(iscale * xm[i]), 0, nmax);
            Laux[i] = (uint8_t)l;
            lf[i] = (float)l;
            const float wl = w[i] * lf[i];
            sum_l += wl;
            sum_l2 += wl * lf[i];
            sum_xl += wl * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        const float err = fit_err(n, x, w, lf, this_scale, this_min, use_abs);
        if (err < best_err) {
            memcpy(L, Laux, (size_t)n);
            best_err = err;
            scale = this_scale;
            min = this_min;
            for (int i = 0; i < n; i++) xm[i] = x[i] - min;
        }
    }
    *neg_min = -min;
    return scale;
}

/* hr_iq4_index_2v's table: entry f + 232 counts the midpoints 2m = a + b of neighbouring
 * IQ4 levels (-127 -104 -83 -65 -49 -35 -22 -10 1 13 25 38 53 69 89 113) with f >= 2m. */
#define IQ4_T(f)                                                                                   \
    ((f) >= -231) + ((f) >= -187) + ((f) >= -148) + ((f) >= -114) + ((f) >= -84) + ((f) >= -57) + \
        ((f) >= -32) + ((f) >= -9) + ((f) >= 14) + ((f) >= 38) + ((f) >= 63) + ((f) >= 91) +      \
        ((f) >= 122) + ((f) >= 158) + ((f) >= 202)
#define IQ4_R4(b) IQ4_T(b), IQ4_T((b) + 1), IQ4_T((b) + 2), IQ4_T((b) + 3)
#define IQ4_R16(b) IQ4_R4(b), IQ4_R4((b) + 4), IQ4_R4((b) + 8), IQ4_R4((b) + 12)
#define IQ4_R64(b) IQ4_R16(b), IQ4_R16((b) + 16), IQ4_R16((b) + 32), IQ4_R16((b) + 48)
const uint8_t hr_iq4_index_of_2v[448] = {IQ4_R64(-232), IQ4_R64(-168), IQ4_R64(-104), IQ4_R64(-40),
                                         IQ4_R64(24),   IQ4_R64(88),   IQ4_R64(152)};

/* The IQ4 levels as floats, so the fit converts no integers. */
static const float iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* Weighted fits (sum w*q*x, sum w*q*q, weights x^2) of the levels chosen at nc inverse
 * scales at once: element-major, so the nc running sums are independent chains instead of
 * one chain per scale, while each sum still adds its 32 terms in ggml's order. id2 holds the
 * inverse scales doubled: (2*id)*x equals 2*(id*x) exactly (a power of two commutes with
 * rounding; where id*x would be subnormal or overflow, both land on the same level). The
 * levels of candidate 0 go to L. */
static void iq4_sums(const float *x, int nc, const float *id2, uint8_t *L, float *sqx, float *sq2) {
    for (int c = 0; c < nc; c++) sqx[c] = sq2[c] = 0;
    for (int j = 0; j < 32; j++) {
        const float xj = x[j], w = xj * xj;
        const int l0 = hr_iq4_index_2v(id2[0] * xj);
        L[j] = (uint8_t)l0;
        sqx[0] += w * iq4_levels[l0] * xj;
        sq2[0] += w * iq4_levels[l0] * iq4_levels[l0];
        for (int c = 1; c < nc; c++) {
            const float q = iq4_levels[hr_iq4_index_2v(id2[c] * xj)];
            sqx[c] += w * q * xj;
            sq2[c] += w * q * q;
        }
    }
}

float hr_qsearch_iq4(const float *x, uint8_t *L, int ntry) {
    float amax;
    const float max = signed_absmax(32, x, &amax);
    if (amax < HR_GROUP_EPS) return 0.0f;
    if (ntry > 7) ntry = 7; /* the arrays below; every caller passes 7 or less */
    const float lowest = hr_kvalues_iq4nl[0];
    /* Candidate 0, the first guess: the extreme value on the table's end, with ntry > 0 on
     * the positive end. Then the tries t = -ntry..ntry, in the order they are compared. */
    const float d0 = ntry > 0 ? -max / lowest : max / lowest;
    float id2[16], sqx[16], sq2[16];
    int nc = 0;
    id2[nc++] = 2 * (1 / d0);
    for (int t = -ntry; t <= ntry; t++) id2[nc++] = 2 * ((t + hr_kvalues_iq4nl[0]) / max);
    iq4_sums(x, nc, id2, L, sqx, sq2);
    float d = sq2[0] > 0 ? sqx[0] / sq2[0] : 0.0f;
    float best = d * sqx[0];
    for (int c = 1; c < nc; c++) {
        if (sq2[c] > 0 && sqx[c] * sqx[c] > best * sq2[c]) {
            d = sqx[c] / sq2[c];
            best = d * sqx[c];
        }
    }
    return d;
}
