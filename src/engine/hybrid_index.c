/* The hot-neuron index a hybrid context runs with: PowerInfer's GPU index file when it
 * was made for the neuron budget of this plan, else a fresh placement from the model's
 * activation statistics (written back, as PowerInfer does), else an even spread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "hybrid.h"
#include "sparse/place.h"

char *hr_hybrid_model_path(const char *idx_path) {
    const size_t n = idx_path ? strlen(idx_path) : 0, s = strlen(HR_GPUIDX_SUFFIX);
    if (n <= s || strcmp(idx_path + n - s, HR_GPUIDX_SUFFIX)) return NULL;
    char *m = malloc(n - s + 1);
    if (m) memcpy(m, idx_path, n - s), m[n - s] = 0;
    return m;
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* "<model>.stats.gguf", or "x.stats.gguf" for "x.gguf" (as hearth place looks for it). */
static int stats_path(const char *model, char *buf, size_t cap) {
    if ((size_t)snprintf(buf, cap, "%s.stats.gguf", model) >= cap) return -1;
    if (exists(buf)) return 0;
    return hr_stats_path(model, buf, cap);
}

int hr_hybrid_stats(const hearth_model *m, const char *idx_path, hr_stats *st, char *note, size_t cap) {
    memset(st, 0, sizeof *st);
    char *model = hr_hybrid_model_path(idx_path), path[1024];
    if (!model || stats_path(model, path, sizeof path)) {
        free(model);
        snprintf(note, cap, "no activation statistics (model path unknown)");
        return -1;
    }
    free(model);
    hr_err e = {{0}};
    if (!exists(path)) {
        snprintf(note, cap, "no activation statistics (%s)", path);
        return -1;
    }
    /* a mixture's statistics hold its routing counts (expert placement), a dense file's neuron counts */
    const bool moe = m->hp.n_expert > 0;
    if (moe ? hr_stats_read_any(path, st, &e) : hr_stats_read(path, st, &e)) {
        snprintf(note, cap, "activation statistics unusable: %s", e.msg);
        return -1;
    }
    if (moe && (st->n_layer != m->hp.n_layer || st->n_expert != m->hp.n_expert || !st->expert_counts)) {
        snprintf(note, cap, "activation statistics %s are for %d layers of %d experts, the model has %d of %d", path,
                 st->n_layer, st->n_expert, m->hp.n_layer, m->hp.n_expert);
        hr_stats_free(st);
        return -1;
    }
    if (!moe && (st->n_layer != m->hp.n_layer || st->n_ff != m->hp.n_ff)) {
        snprintf(note, cap, "activation statistics %s are for %d layers of %d neurons", path, st->n_layer, st->n_ff);
        hr_stats_free(st);
        return -1;
    }
    return 0;
}

/* Without statistics: the first k neurons of every layer, k from an equal share of the
 * budget per layer. */
static int even_spread(const hr_gpu_plan *plan, int32_t n_ff, hr_gpuidx *out, hr_err *e) {
    if (hr_gpuidx_init(out, plan->n_layer, n_ff, e)) return -1;
    const uint64_t per = plan->neuron_budget / (uint64_t)plan->n_layer;
    for (int32_t il = 0; il < plan->n_layer; il++) {
        uint64_t k = per / plan->neuron_bytes[il];
        if (k > (uint64_t)n_ff) k = (uint64_t)n_ff;
        memset(out->hot + (size_t)il * n_ff, 1, (size_t)k);
    }
    out->vram_capacity = plan->neuron_budget;
    return 0;
}

static int solve(const hr_gpu_plan *plan, const hr_stats *st, int32_t n_ff, hr_gpuidx *out, hr_err *e) {
    if (hr_gpuidx_init(out, plan->n_layer, n_ff, e)) return -1;
    hr_place_problem pb = {plan->n_layer, n_ff, st->counts, plan->neuron_bytes, plan->neuron_budget, 1};
    if (hr_place_solve(&pb, out, NULL, e)) return -1;
    /* The budget it was chosen for: a later context with the same plan reuses it. */
    out->vram_capacity = plan->neuron_budget;
    return 0;
}

/* Bytes of the index's hot neurons under this plan's per-neuron sizes. */
static uint64_t hot_bytes(const hr_gpuidx *g, const hr_gpu_plan *plan) {
    uint64_t b = 0;
    for (int32_t il = 0; il < g->n_layer; il++) b += (uint64_t)hr_gpuidx_bucket(g, il, NULL) * plan->neuron_bytes[il];
    return b;
}

/* The file at path when it was made for this model and neuron budget (hearth place and
 * earlier contexts store the budget as split.vram_capacity) and its neurons fit in it;
 * 1 when absent or stale. */
static int try_read(const hearth_model *m, const char *path, const hr_gpu_plan *plan, hr_gpuidx *out, hr_err *e) {
    if (!path || !exists(path)) return 1;
    if (hr_gpuidx_read(path, out, e)) return hr_errctx(e, "GPU index %s", path);
    if (out->n_layer == m->hp.n_layer && out->n_ff == m->hp.n_ff && out->vram_capacity == plan->neuron_budget &&
        hot_bytes(out, plan) <= plan->neuron_budget)
        return 0;
    hr_gpuidx_free(out);
    return 1;
}

int hr_hybrid_index(const hearth_model *m, const char *idx_path, bool reset, const hr_gpu_plan *plan, const hr_stats *st,
                    hr_gpuidx *out, char *note, size_t cap, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (!reset) {
        int r = try_read(m, idx_path, plan, out, e);
        if (r <= 0) {
            if (!r) snprintf(note, cap, "GPU index read from %s", idx_path);
            return r;
        }
    }
    if (!st) {
        /* note already says why there are no statistics */
        size_t n = strlen(note);
        snprintf(note + n, cap - n, "%sneuron budget spread evenly over the layers", n ? "; " : "");
        return even_spread(plan, m->hp.n_ff, out, e);
    }
    if (solve(plan, st, m->hp.n_ff, out, e)) return -1;
    hr_err we = {{0}};
    if (!idx_path) snprintf(note, cap, "GPU index made from statistics, kept in memory (no path)");
    else if (hr_gpuidx_write(idx_path, out, &we)) snprintf(note, cap, "GPU index made from statistics, kept in memory: %.180s", we.msg);
    else snprintf(note, cap, "GPU index made from statistics, written to %.180s", idx_path);
    return 0;
}
