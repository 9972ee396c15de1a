/* Whole-model placement: account the fixed GPU memory, read the statistics, choose the
 * hot neurons for what is left of the budget, write PowerInfer's GPU index. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "place.h"
#include "stats.h"

#define GIB 1073741824.0

static char *concat(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    char *p = malloc(na + nb + 1);
    if (!p) return NULL;
    memcpy(p, a, na);
    memcpy(p + na, b, nb + 1);
    return p;
}

/* <model>.stats.gguf: the full model path plus the suffix (like the GPU index), or, when
 * only that exists, the path with its .gguf extension replaced. */
static char *default_stats_path(const char *model) {
    char *full = concat(model, strlen(model), ".stats.gguf");
    size_t n = strlen(model);
    struct stat st;
    if (!full || stat(full, &st) == 0 || n < 5 || strcmp(model + n - 5, ".gguf")) return full;
    char *alt = concat(model, n - 5, ".stats.gguf");
    if (alt && stat(alt, &st) == 0) {
        free(full);
        return alt;
    }
    free(alt);
    return full;
}

static int check_params(const hr_place_params *p, const hr_place_shape *s, hr_err *e) {
    if (!p->model_path) return hr_errf(e, "no model path");
    if (!(p->vram_budget_gib > 0) || !isfinite(p->vram_budget_gib) || p->vram_budget_gib > 1e6)
        return hr_errf(e, "VRAM budget %g GiB is not a positive size", p->vram_budget_gib);
    if (p->n_ctx < 1) return hr_errf(e, "context size %d must be positive", p->n_ctx);
    if (p->group < 1) return hr_errf(e, "group size %d must be positive", p->group);
    if (s->n_layer < 1 || s->n_ff < 1) return hr_errf(e, "model has no FFN layers");
    return 0;
}

/* Sizes in the unit that keeps them readable, small test models and 70B models alike. */
static const char *human(uint64_t b, char *buf, size_t cap) {
    if (b < 1024 * 1024) snprintf(buf, cap, "%.1f KiB", (double)b / 1024.0);
    else if (b < (uint64_t)GIB) snprintf(buf, cap, "%.1f MiB", (double)b / 1048576.0);
    else snprintf(buf, cap, "%.2f GiB", (double)b / GIB);
    return buf;
}

static int budget_error(const hr_place_result *r, hr_err *e) {
    const hr_vram_fixed *f = &r->fixed;
    char a[7][32];
    /* Round the suggestion up so that passing it back fits. */
    const double need = ceil((double)f->total / GIB * 1000.0) / 1000.0;
    return hr_errf(e,
                   "VRAM budget of %.3f GiB (%llu bytes) is too small: the GPU must first hold %llu bytes "
                   "(attention %s, predictors %s, norms %s, output %s, other %s, KV cache for %d tokens %s, "
                   "scratch %s); use --vram-budget %.3f or more (or a smaller -c)",
                   (double)r->budget / GIB, (unsigned long long)r->budget, (unsigned long long)f->total,
                   human(f->attn, a[0], 32), human(f->predictor, a[1], 32), human(f->norms, a[2], 32),
                   human(f->output, a[3], 32), human(f->other, a[4], 32), r->n_ctx, human(f->kv, a[5], 32),
                   human(f->scratch, a[6], 32), need);
}

static int check_stats(const hr_stats *st, const hr_place_result *r, hr_err *e) {
    if (st->n_layer != r->shape.n_layer)
        return hr_errf(e, "statistics file %s has %d layers, the model has %d", r->stats_path, st->n_layer, r->shape.n_layer);
    if (st->n_ff != r->shape.n_ff)
        return hr_errf(e, "statistics file %s has n_ff %d, the model has n_ff %d", r->stats_path, st->n_ff, r->shape.n_ff);
    return 0;
}

/* Budget accounting; the neuron budget is what is left after the fixed part. */
static int account(const hr_place_params *p, hr_place_result *r, hr_err *e) {
    gguf_file f;
    if (gguf_open(&f, p->model_path, e)) return hr_errctx(e, "%s", p->model_path);
    int rc = hr_vram_account(&f, &r->shape, r->n_ctx, &r->fixed, r->neuron_bytes, e);
    gguf_close(&f);
    if (rc) return hr_errctx(e, "%s", p->model_path);
    for (int32_t l = 0; l < r->shape.n_layer; l++) r->ffn_bytes += r->neuron_bytes[l] * (uint64_t)r->shape.n_ff;
    if (r->fixed.total > r->budget) return budget_error(r, e);
    r->neuron_budget = r->budget - r->fixed.total;
    return 0;
}

static int solve_and_write(hr_place_result *r, const hr_stats *st, hr_err *e) {
    hr_gpuidx g;
    if (hr_gpuidx_init(&g, r->shape.n_layer, r->shape.n_ff, e)) return -1;
    hr_place_problem pb = {r->shape.n_layer, r->shape.n_ff, st->counts, r->neuron_bytes, r->neuron_budget, r->group};
    int rc = hr_place_solve(&pb, &g, r->layers, e);
    if (!rc) {
        for (int32_t l = 0; l < r->shape.n_layer; l++) r->neuron_used += r->layers[l].bytes;
        /* PowerInfer rejects an index whose capacity exceeds the VRAM it has left, so store
         * what the hot neurons need rather than the budget they were chosen under. */
        g.vram_capacity = r->neuron_used;
        rc = hr_gpuidx_write(r->out_path, &g, e);
    }
    hr_gpuidx_free(&g);
    return rc;
}

int hr_place_model(const hr_place_params *p, const hr_place_shape *shape, hr_place_result *r, hr_err *e) {
    memset(r, 0, sizeof *r);
    if (check_params(p, shape, e)) return -1;
    r->shape = *shape, r->n_ctx = p->n_ctx, r->group = p->group;
    r->budget = (uint64_t)(p->vram_budget_gib * GIB);
    r->stats_path = p->stats_path ? concat(p->stats_path, strlen(p->stats_path), "") : default_stats_path(p->model_path);
    r->out_path = p->out_path ? concat(p->out_path, strlen(p->out_path), "") : hr_gpuidx_default_path(p->model_path);
    r->neuron_bytes = calloc((size_t)shape->n_layer, sizeof *r->neuron_bytes);
    r->layers = calloc((size_t)shape->n_layer, sizeof *r->layers);
    if (!r->stats_path || !r->out_path || !r->neuron_bytes || !r->layers) {
        hr_place_result_free(r);
        return hr_errf(e, "out of memory");
    }
    hr_stats st;
    int rc = account(p, r, e);
    if (!rc) rc = hr_stats_read(r->stats_path, &st, e);
    if (!rc) {
        r->n_tokens = st.n_tokens;
        rc = check_stats(&st, r, e);
        if (!rc) rc = solve_and_write(r, &st, e);
        hr_stats_free(&st);
    }
    if (rc) hr_place_result_free(r);
    return rc;
}

void hr_place_result_free(hr_place_result *r) {
    if (!r) return;
    free(r->neuron_bytes), free(r->layers), free(r->stats_path), free(r->out_path);
    memset(r, 0, sizeof *r);
}
