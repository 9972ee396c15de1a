/* hearth calibrate on mixtures of experts: counts (src/sparse/moe_calib.c), a per-layer table,
 * the statistics file and the transposed-down model. Predictors inside experts are not
 * trained (yet): --ffn exact needs none. */
#include <stdio.h>
#include <stdlib.h>
#include "moe_cli.h"
#include "sparse/moe_calib.h"

/* Per layer: the busiest experts' shares of the token-expert pairs, experts never routed to,
 * and (ReLU-family experts) the share of a routed expert's neurons that fire. */
static void print_table(const hr_stats *s) {
    printf("%5s  %-34s %7s  %s\n", "layer", "busiest experts (share of routings)", "unused", s->counts ? "fired in routed experts" : "");
    for (int32_t l = 0; l < s->n_layer; l++) {
        const uint32_t *ec = s->expert_counts + (size_t)l * (size_t)s->n_expert;
        uint64_t tot = 0, fired = 0;
        int32_t unused = 0, top[3] = {-1, -1, -1};
        for (int32_t x = 0; x < s->n_expert; x++) {
            tot += ec[x], unused += !ec[x];
            for (int r = 0; r < 3; r++)
                if (top[r] < 0 || ec[x] > ec[top[r]]) {
                    for (int q = 2; q > r; q--) top[q] = top[q - 1];
                    top[r] = x;
                    break;
                }
        }
        char buf[64];
        int at = 0;
        for (int r = 0; r < 3 && top[r] >= 0 && at < (int)sizeof buf; r++)
            at += snprintf(buf + at, sizeof buf - (size_t)at, "%s#%d %.1f%%", r ? ", " : "", top[r], tot ? 100.0 * ec[top[r]] / (double)tot : 0.0);
        printf("%5d  %-34s %7d", l, buf, unused);
        if (s->counts) {
            const uint32_t *c = s->counts + (size_t)l * (size_t)s->n_expert * (size_t)s->n_ff;
            for (size_t i = 0; i < (size_t)s->n_expert * (size_t)s->n_ff; i++) fired += c[i];
            printf("  %6.2f%%", tot ? 100.0 * (double)fired / ((double)tot * s->n_ff) : 0.0);
        }
        printf("\n");
    }
}

int hr_calibrate_moe(hearth_model *m, const int32_t *toks, size_t n, const char *out, const hr_collect_opts *co, hr_err *e) {
    char spath[4096];
    if (hr_stats_path(out, spath, sizeof spath)) return hr_errf(e, "output path too long");
    hr_stats s;
    if (hr_calib_moe(m, toks, (int64_t)n, co, &s, e)) return -1;
    fprintf(stderr, "calibrate: counted %llu tokens over %d layers of %d experts (%d used)\n", (unsigned long long)s.n_tokens, s.n_layer,
            s.n_expert, s.n_expert_used);
    print_table(&s);
    const bool neurons = s.counts != NULL;
    int rc = neurons ? hr_write_moe_down_t(m, out, e) : 0;
    if (!rc) rc = hr_stats_write(spath, &s, e);
    if (!rc && neurons)
        fprintf(stderr, "wrote %s (experts' down matrices transposed: --ffn exact reads only the firing neurons' rows) and %s\n", out, spath);
    else if (!rc)
        fprintf(stderr, "wrote %s (the experts are not ReLU-family: routing counts only, no model file)\n", spath);
    hr_stats_free(&s);
    return rc;
}
