/* SVG plot of activation statistics: left, each layer's activation frequency of neurons
 * sorted hottest first on log-log axes (a power law is a straight line); right, the share
 * of all activations served by the hottest fraction of neurons. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calibrate.h"

#define PW 420.0 /* panel size */
#define PH 300.0
#define ML 70.0  /* left margin of each panel */
#define MT 40.0
#define GAP 110.0
#define POINTS 300

static int cmp_desc(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x > y ? -1 : x < y;
}

static void color(int l, int n, char *buf, size_t cap) {
    snprintf(buf, cap, "hsl(%d,70%%,45%%)", n > 1 ? (int)(300.0 * l / (n - 1)) : 220);
}

static void axes(FILE *f, double x0, const char *title, const char *xl, const char *yl) {
    fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#444'/>\n", x0, MT, PW, PH);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='14'>%s</text>\n", x0 + PW / 2, MT - 14, title);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='12'>%s</text>\n", x0 + PW / 2, MT + PH + 36, xl);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='12' transform='rotate(-90 %.1f %.1f)'>%s</text>\n",
            x0 - 48, MT + PH / 2, x0 - 48, MT + PH / 2, yl);
}

/* Decade ticks of a log axis spanning [lo, hi] (log10 values). */
static void log_ticks(FILE *f, double x0, double lo, double hi, bool vertical) {
    for (int k = (int)ceil(lo); k <= (int)floor(hi); k++) {
        double u = (k - lo) / (hi - lo);
        if (vertical) {
            double y = MT + PH - u * PH;
            fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>", x0, y, x0 + PW, y);
            fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end' font-size='11'>1e%d</text>\n", x0 - 4, y + 4, k);
        } else {
            double x = x0 + u * PW;
            fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>", x, MT, x, MT + PH);
            fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='11'>1e%d</text>\n", x, MT + PH + 16, k);
        }
    }
}

static void lin_ticks(FILE *f, double x0) {
    for (int k = 0; k <= 4; k++) {
        double u = k / 4.0, x = x0 + u * PW, y = MT + PH - u * PH;
        fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>", x, MT, x, MT + PH);
        fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/>", x0, y, x0 + PW, y);
        fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle' font-size='11'>%.2f</text>", x, MT + PH + 16, u);
        fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end' font-size='11'>%.2f</text>\n", x0 - 4, y + 4, u);
    }
}

static void curves(FILE *f, const hr_stats *s, uint32_t *sorted, double x1) {
    const int64_t ff = s->n_ff;
    const double nt = s->n_tokens ? (double)s->n_tokens : 1.0;
    uint32_t min_nz = UINT32_MAX; /* the frequency axis starts at the rarest firing neuron's decade */
    for (int64_t i = 0; i < (int64_t)s->n_layer * ff; i++)
        if (s->counts[i] && s->counts[i] < min_nz) min_nz = s->counts[i];
    double ylo = min_nz == UINT32_MAX ? -1 : floor(log10(min_nz / nt));
    if (ylo > -1) ylo = -1;
    const double xhi = log10((double)ff) > 0 ? log10((double)ff) : 1;
    log_ticks(f, ML, 0, xhi, false), log_ticks(f, ML, ylo, 0, true), lin_ticks(f, x1);
    char col[48];
    for (int32_t l = 0; l < s->n_layer; l++) {
        memcpy(sorted, s->counts + (size_t)l * (size_t)ff, sizeof(uint32_t) * (size_t)ff);
        qsort(sorted, (size_t)ff, sizeof(uint32_t), cmp_desc);
        color(l, s->n_layer, col, sizeof col);
        fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", col);
        for (int p = 0, prev = -1; p < POINTS; p++) { /* log-spaced ranks */
            int64_t i = (int64_t)floor(pow((double)ff, (double)p / (POINTS - 1))) - 1;
            if (i >= ff) i = ff - 1;
            if (i == prev) continue;
            prev = (int)i;
            if (!sorted[i]) break; /* zero frequency has no place on a log axis */
            double x = ML + log10((double)(i + 1)) / xhi * PW, y = MT + PH - (log10(sorted[i] / nt) - ylo) / (0 - ylo) * PH;
            fprintf(f, "%.1f,%.1f ", x, y);
        }
        fprintf(f, "'/>\n<polyline fill='none' stroke='%s' stroke-width='1.5' points='%.1f,%.1f ", col, x1, MT + PH);
        double total = 0, acc = 0;
        for (int64_t i = 0; i < ff; i++) total += sorted[i];
        int64_t next = 0;
        for (int64_t i = 0; i < ff; i++) {
            acc += sorted[i];
            if (i + 1 >= next || i == ff - 1) {
                double u = (double)(i + 1) / (double)ff, v = total > 0 ? acc / total : 0;
                fprintf(f, "%.1f,%.1f ", x1 + u * PW, MT + PH - v * PH);
                next = i + 1 + (ff + POINTS - 1) / POINTS;
            }
        }
        fprintf(f, "'/>\n");
        if (s->n_layer <= 64)
            fprintf(f, "<text x='%.1f' y='%.1f' font-size='10' fill='%s'>layer %d</text>\n", x1 + PW + 10,
                    MT + 10 + 12.0 * l, col, l);
    }
}

int hr_plot_svg(const hr_stats *s, const char *path, hr_err *e) {
    uint32_t *sorted = malloc(sizeof(uint32_t) * (size_t)s->n_ff);
    if (!sorted) return hr_errf(e, "out of memory");
    FILE *f = fopen(path, "w");
    if (!f) {
        free(sorted);
        return hr_errf(e, "cannot write %s", path);
    }
    const double x1 = ML + PW + GAP, W = x1 + PW + 90, H = MT + PH + 60;
    fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' font-family='sans-serif'>\n", W, H);
    fprintf(f, "<rect width='100%%' height='100%%' fill='white'/>\n");
    axes(f, ML, "activation frequency, neurons sorted (log-log)", "neuron rank", "fraction of tokens");
    axes(f, x1, "share of activations served by the hottest neurons", "fraction of neurons (hottest first)", "share of activations");
    curves(f, s, sorted, x1);
    fprintf(f, "</svg>\n");
    free(sorted);
    if (fclose(f)) return hr_errf(e, "error writing %s", path);
    return 0;
}
