/* hearth calibrate on mixtures of experts: counts (src/sparse/moe_calib.c), a per-layer table,
 * the statistics file, the per-expert predictors (src/sparse/moe_pred.c) and the model with
 * transposed expert down matrices and those predictors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/types.h"
#include "moe_cli.h"
#include "sparse/moe_pred.h"
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

/* Per layer: experts given a predictor, their mean test recall and precision, and the gate
 * bytes a routed token reads in predicted mode against exact (the kept experts). */
static void print_preds(const hr_stats *s, const hr_moe_pred *p, bool verbose) {
    printf("%5s  %10s  %7s  %9s  %s\n", "layer", "predictors", "recall", "precision", "gate bytes per routing (kept experts, predicted / exact)");
    for (int32_t l = 0; l < s->n_layer; l++) {
        int32_t kept = 0;
        double rec = 0, prec = 0, pb = 0, gb = 0;
        for (int32_t x = 0; x < s->n_expert; x++) {
            const hr_moe_pred *q = &p[(size_t)l * (size_t)s->n_expert + (size_t)x];
            if (!q->p.fc1) continue;
            kept++, rec += q->p.recall, prec += q->p.precision, pb += q->pred_bytes, gb += q->gate_bytes;
        }
        if (kept) printf("%5d  %6d/%-3d  %6.2f%%  %8.2f%%  %.0f / %.0f KB\n", l, kept, s->n_expert, 100 * rec / kept, 100 * prec / kept, pb / kept / 1024, gb / kept / 1024);
        else printf("%5d  %6d/%-3d  %7s  %9s  -\n", l, 0, s->n_expert, "-", "-");
        for (int32_t x = 0; verbose && x < s->n_expert; x++) {
            const hr_moe_pred *q = &p[(size_t)l * (size_t)s->n_expert + (size_t)x];
            if (q->p.fc1)
                fprintf(stderr, "  layer %d expert %d: rank %d, recall %.2f%%, precision %.2f%%, predicted %.1f%% (fires %.1f%%), %lld pairs; %.0f KB a routing against exact's %.0f KB\n",
                        l, x, q->p.r, 100.0 * q->p.recall, 100.0 * q->p.precision, 100.0 * q->p.pred_frac, 100.0 * q->p.true_frac, (long long)q->n_pairs,
                        q->pred_bytes / 1024, q->gate_bytes / 1024);
            else fprintf(stderr, "  layer %d expert %d: no predictor: %s\n", l, x, q->why);
        }
    }
}

static size_t n_kept(const hr_moe_pred *p, size_t n) {
    size_t k = 0;
    for (size_t i = 0; p && i < n; i++) k += p[i].p.fc1 != NULL;
    return k;
}

/* The predictors of every expert from the collected pairs. */
static int train_preds(hearth_model *m, const hr_moe_pairs *pairs, const hr_moe_cal_opts *po, const hr_collect_opts *co, bool f16,
                       hr_moe_pred *preds, hr_err *e) {
    hr_cpu cpu;
    long nt = po->threads ? po->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (hr_cpu_init(&cpu, nt > 0 ? (int)nt : 1, e)) return -1;
    const hr_moe_pred_opts o = {po->recall, po->max_rank, po->epochs, f16, po->seed, co->progress, co->progress_ud};
    const int rc = hr_moe_train_preds(&cpu, m, pairs, &o, preds, e);
    hr_cpu_free(&cpu);
    return rc;
}

int hr_calibrate_moe(hearth_model *m, const int32_t *toks, size_t n, const char *out, const hr_collect_opts *co, const hr_moe_cal_opts *po,
                     hr_err *e) {
    char spath[4096];
    if (hr_stats_path(out, spath, sizeof spath)) return hr_errf(e, "output path too long");
    const hearth_model_info *info = hearth_model_get_info(m);
    const bool relu = strcmp(info->ffn_act, "reglu") == 0 || strcmp(info->ffn_act, "drelu") == 0, want_preds = relu && !po->no_predictors;
    const bool f16 = info->weight_type != HR_F32;
    hr_moe_pairs pairs;
    if (want_preds && hr_moe_pairs_init(&pairs, m, po->pairs, po->seed, e)) return -1;
    hr_stats s;
    if (hr_calib_moe(m, toks, (int64_t)n, co, &s, want_preds ? &pairs : NULL, e)) return want_preds ? (hr_moe_pairs_free(&pairs), -1) : -1;
    fprintf(stderr, "calibrate: counted %llu tokens over %d layers of %d experts (%d used)\n", (unsigned long long)s.n_tokens, s.n_layer,
            s.n_expert, s.n_expert_used);
    print_table(&s);
    const bool neurons = s.counts != NULL;
    const size_t n_pred = (size_t)s.n_layer * (size_t)s.n_expert;
    hr_moe_pred *preds = want_preds && neurons ? calloc(n_pred, sizeof *preds) : NULL;
    int rc = want_preds && neurons && !preds ? hr_errf(e, "out of memory") : 0;
    if (!rc && preds) {
        fprintf(stderr, "calibrate: training expert predictors (recall target %g; at most %lld pairs per expert)\n", po->recall, (long long)po->pairs);
        rc = train_preds(m, &pairs, po, co, f16, preds, e);
        if (!rc) print_preds(&s, preds, po->verbose);
    }
    if (want_preds) hr_moe_pairs_free(&pairs);
    if (!rc && neurons) rc = hr_write_moe_sparse(m, preds, f16, out, e);
    if (!rc) rc = hr_stats_write(spath, &s, e);
    if (!rc && neurons)
        fprintf(stderr, "wrote %s (experts' down matrices transposed: --ffn exact reads only the firing neurons' rows%s) and %s\n", out,
                n_kept(preds, n_pred) ? "; expert predictors for --ffn predicted" : "", spath);
    else if (!rc)
        fprintf(stderr, "wrote %s (the experts are not ReLU-family: routing counts only, no model file)\n", spath);
    hr_moe_preds_free(preds, preds ? n_pred : 0);
    free(preds);
    hr_stats_free(&s);
    return rc;
}
