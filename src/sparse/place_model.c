/* Whole-model placement: read the statistics, choose the hot neurons for the neuron
 * budget the caller was given (the engine's GPU plan), write PowerInfer's GPU index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "place.h"
#include "stats.h"

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

static int check_params(const hr_place_params *p, hr_err *e) {
    if (!p->model_path) return hr_errf(e, "no model path");
    if (p->n_layer < 1 || p->n_ff < 1 || !p->neuron_bytes) return hr_errf(e, "model has no FFN layers");
    if (p->neuron_budget == 0) return hr_errf(e, "no bytes for neurons");
    if (p->group < 1) return hr_errf(e, "group size %d must be positive", p->group);
    return 0;
}

static int check_stats(const hr_stats *st, const hr_place_result *r, hr_err *e) {
    if (st->n_layer != r->n_layer)
        return hr_errf(e, "statistics file %s has %d layers, the model has %d", r->stats_path, st->n_layer, r->n_layer);
    if (st->n_ff != r->n_ff)
        return hr_errf(e, "statistics file %s has n_ff %d, the model has n_ff %d", r->stats_path, st->n_ff, r->n_ff);
    return 0;
}

static int solve_and_write(const hr_place_params *p, hr_place_result *r, const hr_stats *st, hr_err *e) {
    hr_gpuidx g;
    if (hr_gpuidx_init(&g, r->n_layer, r->n_ff, e)) return -1;
    hr_place_problem pb = {r->n_layer, r->n_ff, st->counts, p->neuron_bytes, r->neuron_budget, r->group};
    int rc = hr_place_solve(&pb, &g, r->layers, e);
    if (!rc) {
        for (int32_t l = 0; l < r->n_layer; l++) r->neuron_used += r->layers[l].bytes;
        /* PowerInfer's meaning (its --vram-capacity): the budget the neurons were chosen
         * for. Hybrid execution reuses the index when its own neuron budget is this. */
        g.vram_capacity = r->neuron_budget;
        rc = hr_gpuidx_write(r->out_path, &g, e);
    }
    hr_gpuidx_free(&g);
    return rc;
}

int hr_place_model(const hr_place_params *p, hr_place_result *r, hr_err *e) {
    memset(r, 0, sizeof *r);
    if (check_params(p, e)) return -1;
    r->n_layer = p->n_layer, r->n_ff = p->n_ff, r->group = p->group, r->neuron_budget = p->neuron_budget;
    for (int32_t l = 0; l < p->n_layer; l++) r->ffn_bytes += p->neuron_bytes[l] * (uint64_t)p->n_ff;
    r->stats_path = p->stats_path ? concat(p->stats_path, strlen(p->stats_path), "") : default_stats_path(p->model_path);
    r->out_path = p->out_path ? concat(p->out_path, strlen(p->out_path), "") : hr_gpuidx_default_path(p->model_path);
    r->layers = calloc((size_t)p->n_layer, sizeof *r->layers);
    if (!r->stats_path || !r->out_path || !r->layers) {
        hr_place_result_free(r);
        return hr_errf(e, "out of memory");
    }
    hr_stats st;
    int rc = hr_stats_read(r->stats_path, &st, e);
    if (!rc) {
        r->n_tokens = st.n_tokens;
        rc = check_stats(&st, r, e);
        if (!rc) rc = solve_and_write(p, r, &st, e);
        hr_stats_free(&st);
    }
    if (rc) hr_place_result_free(r);
    return rc;
}

void hr_place_result_free(hr_place_result *r) {
    if (!r) return;
    free(r->layers), free(r->stats_path), free(r->out_path);
    memset(r, 0, sizeof *r);
}
