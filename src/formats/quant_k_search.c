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
     * normal equations), clamp the min to <= 0, and keep the fit with the smallest error. */
    uint8_t Laux[32];
    for (int step = 0; step <= nstep; step++) {
        iscale = (rmin + rdelta * step + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = hr_qclamp(hr_qnearest(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (!(det > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) err += w[i] * weighted_err(this_scale * Laux[i] + this_min - x[i], use_abs);
        if (err < best_err) {
            memcpy(L, Laux, (size_t)n);
            best_err = err;
            scale = this_scale;
            min = this_min;
        }
    }
    *neg_min = -min;
    return scale;
}

/* Weighted fit of levels chosen at inverse scale id: sum w*q*x and sum w*q*q, weights x^2. */
static void iq4_sums(const float *x, float id, uint8_t *L, float *sqx, float *sq2) {
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; j++) {
        const int l = hr_qbest_index(hr_kvalues_iq4nl, id * x[j]);
        if (L) L[j] = (uint8_t)l;
        const float q = hr_kvalues_iq4nl[l], w = x[j] * x[j];
        sumqx += w * q * x[j];
        sumq2 += w * q * q;
    }
    *sqx = sumqx, *sq2 = sumq2;
}

float hr_qsearch_iq4(const float *x, uint8_t *L, int ntry) {
    float amax;
    const float max = signed_absmax(32, x, &amax);
    if (amax < HR_GROUP_EPS) return 0.0f;
    const float lowest = hr_kvalues_iq4nl[0];
    /* First guess: the extreme value on the table's end; with ntry > 0 on the positive end. */
    const float d0 = ntry > 0 ? -max / lowest : max / lowest;
    float sumqx, sumq2;
    iq4_sums(x, 1 / d0, L, &sumqx, &sumq2);
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int t = -ntry; t <= ntry; t++) {
        iq4_sums(x, (t + hr_kvalues_iq4nl[0]) / max, NULL, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}
