/* hearth_gpu_plan_budget: a context's GPU accounting without the context. The shape, the
 * budget conversion, the device overhead and the plan are the ones hearth_ctx_new uses, so
 * the neuron budget reported here is the split.vram_capacity such a context looks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device/standin.h"
#include "context.h"
#include "hybrid.h"
#include "sparse/stats.h"

/* An arena budget no model reaches: the plan then holds every dense part. */
#define UNBOUNDED (UINT64_C(1) << 62)

static void standin_overhead(hearth_gpu_budget *out, const char *why) {
    out->overhead = HR_STANDIN_OVERHEAD;
    snprintf(out->device, sizeof out->device, "standin%s%.120s%s", why ? " (" : "", why ? why : "", why ? ")" : "");
}

/* The overhead of the device a context with p would open (a CUDA device is opened to ask). */
static int device_overhead(const hearth_ctx_params *p, hearth_gpu_budget *out, hr_err *e) {
    if (p->gpu == HEARTH_GPU_STANDIN) return standin_overhead(out, NULL), 0;
    if (p->gpu == HEARTH_GPU_OFF) return hr_errf(e, "GPU accounting needs a device, and the GPU is off");
    if (p->gpu != HEARTH_GPU_CUDA && p->gpu != HEARTH_GPU_AUTO) return hr_errf(e, "unknown GPU mode %d", (int)p->gpu);
    if (p->gpu == HEARTH_GPU_AUTO && !hr_dev_cuda_built()) return standin_overhead(out, "no CUDA backend in this build"), 0;
    hr_err de = {{0}};
    hr_dev *d = hr_dev_cuda_open(p->gpu_device, &de);
    if (!d) {
        if (p->gpu == HEARTH_GPU_CUDA) return hr_errf(e, "%s", de.msg);
        return standin_overhead(out, de.msg), 0;
    }
    out->overhead = d->ops->overhead(d);
    snprintf(out->device, sizeof out->device, "cuda:%d", p->gpu_device);
    hr_dev_close(d);
    return 0;
}

static int plan_for_freq(hearth_model *m, const hearth_ctx_params *p, const hr_ctx_shape *s, uint64_t arena,
                         const uint32_t *freq, const uint32_t *neuron_freq, hr_gpu_plan *plan, hr_err *e) {
    hr_gpu_plan_in in = {m, s->n_ctx, s->n_seq, s->n_batch, arena, s->ffn_mode, p->n_gpu_layers, NULL, p->n_cpu_moe, freq,
                         p->moe_cache, neuron_freq};
    return hr_gpu_plan_make(&in, plan, e);
}
static int plan_for(hearth_model *m, const hearth_ctx_params *p, const hr_ctx_shape *s, uint64_t arena, hr_gpu_plan *plan,
                    hr_err *e) {
    return plan_for_freq(m, p, s, arena, NULL, NULL, plan, e);
}

static int fill(hearth_gpu_budget *out, const hr_gpu_plan *plan, const hearth_ctx_params *p, hr_err *e) {
    memcpy(out->bytes, plan->bytes, sizeof out->bytes);
    for (int c = 0; c < HEARTH_GPU_CAT_COUNT; c++) out->fixed += out->bytes[c];
    out->layers_attn = plan->n_attn, out->layers_whole = plan->n_whole, out->output_on_device = plan->output;
    for (int32_t il = 0; il < plan->n_layer; il++) out->layers_pred += plan->layers[il].pred;
    out->takes_index = hr_gpu_plan_takes_index(plan, p);
    out->neuron_budget = out->takes_index ? plan->neuron_budget : 0;
    out->n_layer = plan->n_layer, out->ffn_bytes = plan->ffn_bytes;
    out->neuron_bytes = malloc(sizeof *out->neuron_bytes * (size_t)plan->n_layer);
    if (!out->neuron_bytes) return hr_errf(e, "out of memory");
    memcpy(out->neuron_bytes, plan->neuron_bytes, sizeof *out->neuron_bytes * (size_t)plan->n_layer);
    return 0;
}

/* Below need no byte is left for neurons: with an unbounded arena the neuron budget is
 * the arena minus need's share of it. */
static int fill_need(hearth_model *m, const hearth_ctx_params *p, const hr_ctx_shape *s, hearth_gpu_budget *out,
                     hr_err *e) {
    hr_gpu_plan all;
    int rc = plan_for(m, p, s, UNBOUNDED, &all, e);
    if (!rc && hr_gpu_plan_takes_index(&all, p)) out->need = out->overhead + (UNBOUNDED - all.neuron_budget);
    hr_gpu_plan_free(&all);
    return rc;
}

int hearth_gpu_plan_budget(hearth_model *m, const hearth_ctx_params *p, hearth_gpu_budget *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (!m || !p) return hr_errf(e, "GPU accounting needs a model and context parameters");
    if (!(p->vram_budget_gib > 0) || p->vram_budget_gib > 1e6)
        return hr_errf(e, "VRAM budget %g GiB is not a positive size", p->vram_budget_gib);
    hr_ctx_shape s;
    if (hr_ctx_shape_resolve(m, p, &s, e) || device_overhead(p, out, e)) return -1;
    out->n_ctx = s.n_ctx, out->n_batch = s.n_batch, out->n_seq = s.n_seq, out->ffn_mode = s.ffn_mode;
    out->budget = hr_hybrid_budget_bytes(p->vram_budget_gib);
    hr_gpu_plan plan;
    int rc = plan_for(m, p, &s, hr_hybrid_arena_bytes(out->budget, out->overhead), &plan, e);
    if (!rc) rc = fill(out, &plan, p, e);
    hr_gpu_plan_free(&plan);
    return rc ? rc : fill_need(m, p, &s, out, e);
}

void hearth_gpu_budget_free(hearth_gpu_budget *b) {
    if (!b) return;
    free(b->neuron_bytes);
    b->neuron_bytes = NULL;
}

static int fill_expert_neurons(const hr_gpu_plan *plan, hearth_gpu_experts *out, hr_err *e);

/* The plan's experts and the statistics' counts into *out. */
static int fill_experts(const hr_gpu_plan *plan, const hr_stats *st, hearth_gpu_experts *out, hr_err *e) {
    const size_t n = (size_t)out->n_layer * (size_t)out->n_expert;
    if (!(out->on_device = calloc(n, 1)) || (st && !(out->routed = calloc(n, sizeof *out->routed))))
        return hr_errf(e, "out of memory");
    for (int32_t il = 0; il < out->n_layer; il++) {
        const hr_gpu_layer *g = &plan->layers[il];
        for (int32_t x = 0; x < out->n_expert; x++) {
            const size_t at = (size_t)il * (size_t)out->n_expert + (size_t)x;
            out->on_device[at] = g->exp_local && g->exp_local[x] >= 0;
            if (st) out->routed[at] = st->expert_counts[at];
        }
        for (int32_t i = 0; i < g->n_exp; i++)
            out->placed_bytes += hr_dev_round((uint64_t)g->exps[i].gate.n_out * g->exps[i].gate.row_bytes) +
                                 hr_dev_round((uint64_t)g->exps[i].up.n_out * g->exps[i].up.row_bytes) +
                                 hr_dev_round((uint64_t)g->exps[i].down.n_out * g->exps[i].down.row_bytes);
    }
    out->n_placed = plan->n_exp_total, out->used = plan->total;
    return fill_expert_neurons(plan, out, e);
}

/* Hot neurons of host experts: per layer and expert how many, and their bytes. */
static int fill_expert_neurons(const hr_gpu_plan *plan, hearth_gpu_experts *out, hr_err *e) {
    const size_t n = (size_t)out->n_layer * (size_t)out->n_expert;
    if (!(out->neurons = calloc(n, sizeof *out->neurons))) return hr_errf(e, "out of memory");
    for (int32_t il = 0; il < out->n_layer; il++)
        for (int32_t i = 0; i < plan->layers[il].n_xhot; i++) {
            const hr_gpu_xhot *x = &plan->layers[il].xhot[i];
            out->neurons[(size_t)il * (size_t)out->n_expert + (size_t)x->id] = x->n_hot;
        }
    out->n_split = plan->n_xhot_total, out->n_neurons = plan->n_xneurons_total, out->neuron_bytes = plan->xhot_bytes;
    return 0;
}

/* The plan's placement as an expert index at path. */
static int write_index(const hr_gpu_plan *plan, const hearth_model *m, const char *path, hearth_gpu_experts *out, hr_err *e) {
    out->expert_budget = plan->expert_budget;
    if (!path || !plan->expert_budget) return 0;
    hr_moeidx x;
    if (hr_gpu_plan_moeidx(plan, m, &x, e)) return -1;
    const int rc = hr_moeidx_write(path, &x, e);
    hr_moeidx_free(&x);
    out->index_written = !rc;
    return rc;
}

int hearth_gpu_plan_experts(hearth_model *m, const hearth_ctx_params *p, const char *stats_path, hearth_gpu_experts *out,
                            hr_err *e) {
    return hearth_gpu_place_experts(m, p, stats_path, NULL, out, e);
}

int hearth_gpu_place_experts(hearth_model *m, const hearth_ctx_params *p, const char *stats_path, const char *index_path,
                             hearth_gpu_experts *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (!m || !p) return hr_errf(e, "GPU accounting needs a model and context parameters");
    if (!m->hp.n_expert) return 0;
    if (!(p->vram_budget_gib > 0) || p->vram_budget_gib > 1e6)
        return hr_errf(e, "VRAM budget %g GiB is not a positive size", p->vram_budget_gib);
    out->n_layer = m->hp.n_layer, out->n_expert = m->hp.n_expert, out->n_expert_used = m->hp.n_expert_used;
    hr_stats st = {0};
    if (stats_path && hr_stats_read_any(stats_path, &st, e)) return -1;
    if (stats_path && (st.n_layer != m->hp.n_layer || st.n_expert != m->hp.n_expert || !st.expert_counts)) {
        hr_stats_free(&st);
        return hr_errf(e, "statistics %s are for %d layers of %d experts, the model has %d of %d", stats_path, st.n_layer,
                       st.n_expert, m->hp.n_layer, m->hp.n_expert);
    }
    out->n_tokens = st.n_tokens;
    hr_ctx_shape s;
    hearth_gpu_budget b = {0};
    hr_gpu_plan plan = {0};
    int rc = hr_ctx_shape_resolve(m, p, &s, e) || device_overhead(p, &b, e) ? -1 : 0;
    if (!rc) {
        out->budget = hr_hybrid_budget_bytes(p->vram_budget_gib);
        rc = plan_for_freq(m, p, &s, hr_hybrid_arena_bytes(out->budget, b.overhead), stats_path ? st.expert_counts : NULL,
                           stats_path ? st.counts : NULL, &plan, e);
    }
    if (!rc) rc = fill_experts(&plan, stats_path ? &st : NULL, out, e);
    if (!rc && p->moe_cache <= 0) rc = write_index(&plan, m, index_path, out, e);
    hr_gpu_plan_free(&plan);
    if (stats_path) hr_stats_free(&st);
    return rc;
}

void hearth_gpu_experts_free(hearth_gpu_experts *x) {
    if (!x) return;
    free(x->on_device), free(x->routed), free(x->neurons);
    x->on_device = NULL, x->routed = NULL, x->neurons = NULL;
}
