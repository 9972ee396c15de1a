/* Printing of hearth bench --profile (bench_profile.h). Per token: the phase's sums divided
 * by the tokens it evaluated; share: of the phase's forward wall time (the rows, "other"
 * included, add up to it); GB/s: a row's bytes over its own time. */
#include "bench_profile.h"

#include <stdio.h>

void hr_bench_prof_add(hearth_profile *acc, const hearth_profile *p) {
    if (!acc->n_rows) {
        *acc = *p;
        return;
    }
    acc->total_s += p->total_s, acc->tokens += p->tokens, acc->forwards += p->forwards, acc->cpu_s += p->cpu_s;
    for (int32_t i = 0; i < p->n_rows && i < acc->n_rows; i++) {
        acc->rows[i].seconds += p->rows[i].seconds;
        acc->rows[i].calls += p->rows[i].calls;
        acc->rows[i].bytes += p->rows[i].bytes;
    }
}

/* Rows shown: every operation that ran; sync and other count one call per forward, so they
 * are always there. */
static bool shown(const hearth_profile_row *r) { return r->calls > 0 || r->seconds > 0; }

static double gbs(const hearth_profile_row *r) { return r->seconds > 0 ? (double)r->bytes / r->seconds / 1e9 : 0.0; }

static void text_phase(const hearth_profile *p, const char *phase, const char *unit) {
    if (!p->tokens) return;
    const double nt = (double)p->tokens;
    printf("profile %s: %llu tokens in %llu forward calls, %.3f ms per %s\n", phase, (unsigned long long)p->tokens,
           (unsigned long long)p->forwards, 1e3 * p->total_s / nt, unit);
    printf("  process CPU time %.1f%% of wall time x %d threads (below 100%%: other processes had the cores)\n",
           p->total_s > 0 ? 100 * p->cpu_s / (p->total_s * p->threads) : 0.0, p->threads);
    printf("  %-12s %-7s %10s %7s %10s %10s %8s\n", "op", "type", "ms/token", "share", "calls/tok", "MB/token", "GB/s");
    double sum = 0;
    for (int32_t i = 0; i < p->n_rows; i++) {
        const hearth_profile_row *r = &p->rows[i];
        if (!shown(r)) continue;
        sum += r->seconds;
        printf("  %-12s %-7s %10.4f %6.2f%% %10.2f %10.3f %8.2f\n", r->op, r->type, 1e3 * r->seconds / nt,
               p->total_s > 0 ? 100 * r->seconds / p->total_s : 0.0, (double)r->calls / nt, (double)r->bytes / nt / 1e6,
               gbs(r));
    }
    printf("  %-12s %-7s %10.4f %6.2f%%\n", "total", "", 1e3 * sum / nt, p->total_s > 0 ? 100 * sum / p->total_s : 0.0);
}

void hr_bench_prof_text(const bench_prof *bp) {
    text_phase(&bp->decode, "decode", "decoded token");
    text_phase(&bp->prompt, "prompt", "prompt token");
}

static void json_phase(const hearth_profile *p, const char *phase) {
    const double nt = p->tokens ? (double)p->tokens : 1.0;
    printf("\"%s\":{\"tokens\":%llu,\"forwards\":%llu,\"ms_per_token\":%.6f,\"cpu_share\":%.4f,\"rows\":[", phase,
           (unsigned long long)p->tokens, (unsigned long long)p->forwards, 1e3 * p->total_s / nt,
           p->total_s > 0 && p->threads ? p->cpu_s / (p->total_s * p->threads) : 0.0);
    bool first = true;
    for (int32_t i = 0; i < p->n_rows; i++) {
        const hearth_profile_row *r = &p->rows[i];
        if (!shown(r)) continue;
        printf("%s{\"op\":\"%s\",\"type\":\"%s\",\"ms_per_token\":%.6f,\"share\":%.6f,\"calls_per_token\":%.4f,"
               "\"bytes_per_token\":%.1f,\"gb_s\":%.4f}",
               first ? "" : ",", r->op, r->type, 1e3 * r->seconds / nt, p->total_s > 0 ? r->seconds / p->total_s : 0.0,
               (double)r->calls / nt, (double)r->bytes / nt, gbs(r));
        first = false;
    }
    printf("]}");
}

void hr_bench_prof_json(const bench_prof *bp) {
    printf(",\"profile\":{");
    json_phase(&bp->decode, "decode");
    putchar(',');
    json_phase(&bp->prompt, "prompt");
    putchar('}');
}
