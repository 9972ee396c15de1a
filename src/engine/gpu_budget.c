/* hearth_gpu_plan_budget: a context's GPU accounting without the context. The shape, the
 * budget conversion, the device overhead and the plan are the ones hearth_ctx_new uses, so
 * the neuron budget reported here is the split.vram_capacity such a context looks for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device/standin.h"
#include "context.h"
#include "hybrid.h"

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

static int plan_for(hearth_model *m, const hearth_ctx_params *p, const hr_ctx_shape *s, uint64_t arena, hr_gpu_plan *plan,
                    hr_err *e) {
    hr_gpu_plan_in in = {m, s->n_ctx, s->n_seq, s->n_batch, arena, s->ffn_mode, p->n_gpu_layers, NULL};
    return hr_gpu_plan_make(&in, plan, e);
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
