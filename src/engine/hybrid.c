/* Hybrid context setup: the device, the budget, the plan, the hot-neuron index, the
 * arena and the upload of every placed tensor; the GPU status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/device/standin.h"
#include "expert_cache.h"
#include "formats/types.h"
#include "hybrid.h"
#include "moe.h"

#define GIB 1073741824.0
/* The stand-in's memory when no --vram-budget is given: budget = this - margin - overhead. */
#define HR_STANDIN_DEFAULT_CAPACITY (2ull << 30)

uint64_t hr_hybrid_budget_bytes(double gib) { return (uint64_t)(gib * GIB); }
uint64_t hr_hybrid_arena_bytes(uint64_t budget, uint64_t overhead) { return budget > overhead ? budget - overhead : 0; }

static int open_device(hearth_ctx *c, hr_hybrid *h, const hearth_ctx_params *p, hr_err *e) {
    if (p->gpu == HEARTH_GPU_STANDIN) {
        uint64_t cap = p->vram_budget_gib > 0 ? hr_hybrid_budget_bytes(p->vram_budget_gib) : HR_STANDIN_DEFAULT_CAPACITY;
        h->dev = hr_dev_standin_open(cap, hr_pool_threads(c->cpu.pool), e);
        if (h->dev) snprintf(h->st.device, sizeof h->st.device, "standin");
    } else {
        h->dev = hr_dev_cuda_open(p->gpu_device, e);
        if (h->dev) snprintf(h->st.device, sizeof h->st.device, "cuda:%d", p->gpu_device);
    }
    return h->dev ? 0 : -1;
}

/* Arena bytes allowed. The device is open, so its own overhead (context, local memory,
 * scratch) is already out of the free memory it reports: --vram-budget counts everything
 * Hearth takes, that overhead included, and must leave an arena that fits in free memory;
 * without one, the arena is free memory less the margin, and the budget that plus the
 * overhead (not the overhead taken twice). */
static int budget(hr_hybrid *h, const hearth_ctx_params *p, uint64_t *out, hr_err *e) {
    if (!isfinite(p->vram_budget_gib) || p->vram_budget_gib > 1e6)
        return hr_errf(e, "VRAM budget %g GiB is not a size", p->vram_budget_gib);
    uint64_t free_b = 0, total_b = 0;
    if (h->dev->ops->mem_info(h->dev, &free_b, &total_b, e)) return -1;
    const uint64_t margin = (uint64_t)HEARTH_VRAM_MARGIN_MIB << 20, over = h->dev->ops->overhead(h->dev);
    if (p->vram_budget_gib > 0) {
        const uint64_t b = hr_hybrid_budget_bytes(p->vram_budget_gib);
        if (b <= over)
            return hr_errf(e, "--vram-budget %g GiB (%llu bytes) is too small: the device itself takes %llu bytes "
                              "(context, local memory, scratch) before any weight",
                           p->vram_budget_gib, (unsigned long long)b, (unsigned long long)over);
        if (b - over > free_b)
            return hr_errf(e, "--vram-budget %g GiB (%llu bytes) is more than the device can give: %llu bytes beyond "
                              "its own %llu, and %llu are free",
                           p->vram_budget_gib, (unsigned long long)b, (unsigned long long)(b - over),
                           (unsigned long long)over, (unsigned long long)free_b);
        h->st.budget = b;
        *out = b - over;
    } else {
        *out = free_b > margin ? free_b - margin : 0;
        h->st.budget = *out + over;
    }
    return 0;
}

static int make_plan(hearth_ctx *c, hr_hybrid *h, const hearth_ctx_params *p, uint64_t bytes, hr_err *e) {
    hr_stats st;
    bool have_st = !hr_hybrid_stats(c->m, p->gpu_index_path, &st, h->st.note, sizeof h->st.note);
    const bool moe = c->m->hp.n_expert > 0;
    hr_gpu_plan_in in = {c->m, c->n_ctx, c->n_seq, c->n_batch, bytes, c->ffn.mode, p->n_gpu_layers, NULL,
                         p->n_cpu_moe, moe && have_st ? st.expert_counts : NULL, p->moe_cache, moe && have_st ? st.counts : NULL};
    if (moe && have_st)
        snprintf(h->st.note, sizeof h->st.note, "experts placed by their routing counts in the statistics%s",
                 st.counts ? ", hot expert neurons by their firing counts" : "");
    else if (moe) { /* why there are none, then what that means */
        char why[sizeof h->st.note];
        snprintf(why, sizeof why, "%s", h->st.note);
        snprintf(h->st.note, sizeof h->st.note, "%.200s: experts placed lowest layer and id first", why);
    }
    if (hr_gpu_plan_make(&in, &h->plan, e)) {
        if (have_st) hr_stats_free(&st);
        return -1;
    }
    int rc = 0;
    if (hr_gpu_plan_takes_index(&h->plan, p)) {
        hr_gpuidx idx;
        rc = hr_hybrid_index(c->m, p->gpu_index_path, p->reset_gpu_index, &h->plan, have_st ? &st : NULL, &idx, h->st.note,
                             sizeof h->st.note, e);
        if (!rc) {
            hr_gpu_plan_free(&h->plan);
            in.idx = &idx;
            rc = hr_gpu_plan_make(&in, &h->plan, e);
            hr_gpuidx_free(&idx);
        }
    } else if (moe && p->moe_cache <= 0 && !p->disable_gpu_index) {
        rc = hr_hybrid_moe_index(&in, p->gpu_index_path, p->reset_gpu_index, have_st, &h->plan, h->st.note, sizeof h->st.note, e);
    } else if (p->disable_gpu_index && moe) {
        const size_t n = strlen(h->st.note);
        snprintf(h->st.note + n, sizeof h->st.note - n, "; GPU index disabled: not read or written");
    } else if (p->disable_gpu_index) snprintf(h->st.note, sizeof h->st.note, "GPU index disabled: dense parts only");
    h->st.act_share = -1;
    if (!rc && have_st && moe) { /* routings the device's experts would have served on the calibration text */
        uint64_t dev = 0, all = 0;
        for (int32_t il = 0; il < st.n_layer; il++)
            for (int32_t x = 0; x < st.n_expert; x++) {
                const uint64_t n = st.expert_counts[(size_t)il * (size_t)st.n_expert + (size_t)x];
                const hr_gpu_layer *g = &h->plan.layers[il];
                all += n, dev += g->exp_local && g->exp_local[x] >= 0 ? n : 0;
            }
        h->st.act_share = all ? (double)dev / (double)all : 0;
    } else if (!rc && have_st) { /* activations the device's neurons would have served on the calibration text */
        uint64_t hot = 0, all = 0;
        for (int32_t il = 0; il < st.n_layer; il++) {
            const uint32_t *cn = st.counts + (size_t)il * st.n_ff;
            const hr_gpu_layer *g = &h->plan.layers[il];
            for (int32_t j = 0; j < st.n_ff; j++) all += cn[j];
            if (g->ffn_dense)
                for (int32_t j = 0; j < st.n_ff; j++) hot += cn[j];
            for (int32_t i = 0; i < g->n_hot; i++) hot += cn[g->hot_ids[i]];
        }
        h->st.act_share = all ? (double)hot / (double)all : 0;
    }
    if (have_st) hr_stats_free(&st);
    return rc;
}

/* n rows (ids; NULL: all rows) of src into the device matrix d. */
static int upload(hr_hybrid *h, const hr_mat *src, const hr_dmat *d, const int32_t *ids, hr_err *e) {
    if (!src->data || !d->n_out) return 0;
    const uint64_t bytes = (uint64_t)d->n_out * d->row_bytes;
    hr_dev *dev = h->dev;
    if (!ids) return dev->ops->to_dev(dev, d->off, src->data, bytes, e);
    uint8_t *stage = malloc((size_t)bytes);
    if (!stage) return hr_errf(e, "out of memory staging %llu bytes for the device", (unsigned long long)bytes);
    for (int64_t i = 0; i < d->n_out; i++)
        memcpy(stage + i * d->row_bytes, (const uint8_t *)src->data + (size_t)ids[i] * src->row_bytes, d->row_bytes);
    int rc = dev->ops->to_dev(dev, d->off, stage, bytes, e) || dev->ops->sync(dev, e) ? -1 : 0;
    free(stage);
    return rc;
}

/* n floats of v (where the host has it) at device offset off. */
static int upload_vec(hr_hybrid *h, uint64_t off, const float *v, int64_t n, hr_err *e) {
    return v ? h->dev->ops->to_dev(h->dev, off, v, (uint64_t)n * 4, e) : 0;
}

/* The attention vectors gpu_plan.c placed with the layer's matrices. */
static int upload_attn_vecs(hr_hybrid *h, const hr_hparams *hp, const hr_layer *L, const hr_gpu_layer *g, hr_err *e) {
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kd = (int64_t)hp->n_head_kv * hp->head_dim;
    return upload_vec(h, g->bq, L->bq, qd, e) || upload_vec(h, g->bk, L->bk, kd, e) || upload_vec(h, g->bv, L->bv, kd, e) ||
                   upload_vec(h, g->bo, L->bo, hp->n_embd, e) || upload_vec(h, g->q_norm, L->q_norm, hp->head_dim, e) ||
                   upload_vec(h, g->k_norm, L->k_norm, hp->head_dim, e)
               ? -1
               : 0;
}

/* Columns ids[] of a matrix src (hot neurons of an expert's ffn_down_exps) as the rows of the
 * device matrix d: the down_t rows the device's sparse axpy reads. An F32/F16 src keeps its
 * type; any other is dequantized row by row and its columns rounded to d's F16. */
static int upload_columns(hr_hybrid *h, const hr_mat *src, const hr_dmat *d, const int32_t *ids, hr_err *e) {
    const size_t es = d->row_bytes / (size_t)d->n_in, bytes = (size_t)d->n_out * d->row_bytes;
    const bool same = src->type == d->type;
    uint8_t *stage = malloc(bytes);
    float *row = same ? NULL : malloc(sizeof(float) * (size_t)src->n_in);
    if (!stage || (!same && !row)) {
        free(stage), free(row);
        return hr_errf(e, "out of memory staging %zu bytes for the device", bytes);
    }
    for (int64_t k = 0; k < d->n_in; k++) {
        const uint8_t *sr = (const uint8_t *)src->data + (size_t)k * src->row_bytes;
        if (!same) hr_dequant_row(src->type, sr, row, src->n_in);
        for (int64_t i = 0; i < d->n_out; i++) {
            uint8_t *at = stage + (size_t)i * d->row_bytes + (size_t)k * es;
            if (same) memcpy(at, sr + (size_t)ids[i] * es, es);
            else {
                const uint16_t v = hr_f32_to_f16(row[ids[i]]);
                memcpy(at, &v, sizeof v);
            }
        }
    }
    const int rc = h->dev->ops->to_dev(h->dev, d->off, stage, bytes, e) || h->dev->ops->sync(h->dev, e) ? -1 : 0;
    free(stage), free(row);
    return rc;
}

/* Hot neurons of host experts: their gate, up and down_t rows gathered (local row i =
 * hot_ids[i]); without ffn_down_exps_t the down columns, transposed. */
static int upload_expert_neurons(hr_hybrid *h, const hr_layer *L, const hr_gpu_layer *g, hr_err *e) {
    const bool dt = L->moe.down_t.data != NULL;
    for (int32_t i = 0; i < g->n_xhot; i++) {
        const hr_gpu_xhot *x = &g->xhot[i];
        const hr_mat gt = hr_moe_expert(&L->moe.gate, x->id), up = hr_moe_expert(&L->moe.up, x->id);
        const hr_mat dn = hr_moe_expert(dt ? &L->moe.down_t : &L->moe.down, x->id);
        if (upload(h, &gt, &x->gate, x->hot_ids, e) || upload(h, &up, &x->up, x->hot_ids, e) ||
            (dt ? upload(h, &dn, &x->down, x->hot_ids, e) : upload_columns(h, &dn, &x->down, x->hot_ids, e)))
            return -1;
    }
    return 0;
}

static int upload_layer(hr_hybrid *h, const hr_hparams *hp, const hr_layer *L, const hr_gpu_layer *g, hr_err *e) {
    if (g->attn && (upload(h, &L->wq, &g->wq, NULL, e) || upload(h, &L->wk, &g->wk, NULL, e) ||
                    upload(h, &L->wv, &g->wv, NULL, e) || upload(h, &L->wo, &g->wo, NULL, e) ||
                    upload_attn_vecs(h, hp, L, g, e)))
        return -1;
    if (g->pred && (upload(h, &L->ffn.fc1, &g->fc1, NULL, e) || upload(h, &L->ffn.fc2, &g->fc2, NULL, e))) return -1;
    const uint64_t nb = (uint64_t)h->plan.layers[0].wq.n_in * 4; /* n_embd floats */
    if (g->norms && (h->dev->ops->to_dev(h->dev, g->attn_norm, L->attn_norm, nb, e) ||
                     h->dev->ops->to_dev(h->dev, g->ffn_norm, L->ffn_norm, nb, e)))
        return -1;
    for (int32_t i = 0; i < g->n_exp; i++) {
        const hr_gpu_expert *x = &g->exps[i];
        const hr_mat gt = hr_moe_expert(&L->moe.gate, x->id), up = hr_moe_expert(&L->moe.up, x->id);
        const hr_mat dn = hr_moe_expert(x->down_t ? &L->moe.down_t : &L->moe.down, x->id);
        if (upload(h, &gt, &x->gate, NULL, e) || upload(h, &up, &x->up, NULL, e) || upload(h, &dn, &x->down, NULL, e)) return -1;
        const int64_t ff = hp->n_ff_exp;
        if (x->bias && (upload_vec(h, x->gb, L->moe.gate_b + (size_t)x->id * (size_t)ff, ff, e) ||
                        upload_vec(h, x->ub, L->moe.up_b + (size_t)x->id * (size_t)ff, ff, e) ||
                        upload_vec(h, x->db, L->moe.down_b + (size_t)x->id * (size_t)hp->n_embd, hp->n_embd, e)))
            return -1;
    }
    if (upload_expert_neurons(h, L, g, e)) return -1;
    if (g->ffn_dense)
        return upload(h, &L->ffn.gate, &g->gate, NULL, e) || upload(h, &L->ffn.up, &g->up, NULL, e) ||
                       upload(h, &L->ffn.down, &g->down, NULL, e) ? -1 : 0;
    if (g->n_hot)
        return upload(h, &L->ffn.gate, &g->gate, g->hot_ids, e) || upload(h, &L->ffn.up, &g->up, g->hot_ids, e) ||
                       upload(h, &L->ffn.down_t, &g->down, g->hot_ids, e) ? -1 : 0;
    return 0;
}

/* The KV caches start zeroed, like the host's. */
static int zero_kv(hr_hybrid *h, hr_err *e) {
    const uint64_t n = h->plan.bytes[HEARTH_GPU_CAT_KV] / 2, chunk = 1 << 20;
    if (!n) return 0;
    uint8_t *z = calloc(1, chunk);
    if (!z) return hr_errf(e, "out of memory");
    int rc = 0;
    for (uint64_t o = 0; o < n && !rc; o += chunk) {
        const uint64_t b = n - o < chunk ? n - o : chunk;
        rc = h->dev->ops->to_dev(h->dev, h->plan.k_cache + o, z, b, e) || h->dev->ops->to_dev(h->dev, h->plan.v_cache + o, z, b, e);
    }
    if (!rc) rc = h->dev->ops->sync(h->dev, e);
    free(z);
    return rc ? -1 : 0;
}

static int upload_all(hearth_ctx *c, hr_hybrid *h, hr_err *e) {
    const hearth_model *m = c->m;
    if (h->dev->ops->reserve(h->dev, h->plan.total, e) || zero_kv(h, e)) return -1;
    for (int il = 0; il < m->hp.n_layer; il++)
        if (upload_layer(h, &m->hp, &m->layers[il], &h->plan.layers[il], e)) return hr_errctx(e, "uploading layer %d", il);
    if (upload_vec(h, h->plan.rope_ff, h->plan.rope_ff_src, m->hp.n_rot / 2, e)) return -1;
    if (h->plan.output && upload(h, &m->output, &h->plan.out, NULL, e)) return -1;
    /* 0..n_ff_exp-1: every row of a down_t expert, the local rows of an expert's hot neurons */
    if ((h->plan.n_exp_total || h->plan.n_xhot_total) && m->hp.n_ff_exp > 0) {
        int32_t *iota = malloc(sizeof(int32_t) * (size_t)m->hp.n_ff_exp);
        if (!iota) return hr_errf(e, "out of memory");
        for (int32_t j = 0; j < m->hp.n_ff_exp; j++) iota[j] = j;
        int rc = h->dev->ops->to_dev(h->dev, h->plan.sc.eidx, iota, sizeof(int32_t) * (size_t)m->hp.n_ff_exp, e) ||
                 h->dev->ops->sync(h->dev, e);
        free(iota);
        if (rc) return -1;
    }
    return h->dev->ops->sync(h->dev, e);
}

static int host_buffers(hearth_ctx *c, hr_hybrid *h, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    const size_t nb = (size_t)c->n_batch, d = (size_t)hp->n_embd, ff = (size_t)hp->n_ff;
    hr_dev *dev = h->dev;
    h->h_in = dev->ops->host_alloc(dev, nb * d * 4), h->h_y = dev->ops->host_alloc(dev, nb * d * 4);
    h->h_idx = dev->ops->host_alloc(dev, ff * 4), h->h_mask = dev->ops->host_alloc(dev, nb * ff);
    h->h_iota = dev->ops->host_alloc(dev, ff * 4);
    h->local = calloc((size_t)hp->n_layer, sizeof *h->local);
    if (!h->h_in || !h->h_y || !h->h_idx || !h->h_mask || !h->h_iota || !h->local)
        return hr_errf(e, "out of memory for device transfer buffers");
    for (size_t j = 0; j < ff; j++) h->h_iota[j] = (int32_t)j;
    if (h->plan.n_exp_total || h->plan.n_xhot_total) {
        const size_t rows = nb * (size_t)hp->n_expert_used;
        h->h_xe = dev->ops->host_alloc(dev, rows * d * 4), h->h_ye = dev->ops->host_alloc(dev, rows * d * 4);
        if (!h->h_xe || !h->h_ye) return hr_errf(e, "out of memory for device transfer buffers");
        if (h->plan.expert_masks && h->plan.n_xhot_total && !(h->h_emask = dev->ops->host_alloc(dev, rows * (size_t)hp->n_ff_exp)))
            return hr_errf(e, "out of memory for device transfer buffers");
    }
    for (int il = 0; il < hp->n_layer; il++) {
        const hr_gpu_layer *g = &h->plan.layers[il];
        if (!g->n_hot) continue;
        if (!(h->local[il] = malloc(ff * sizeof(int32_t)))) return hr_errf(e, "out of memory");
        for (size_t j = 0; j < ff; j++) h->local[il][j] = -1;
        for (int32_t i = 0; i < g->n_hot; i++) h->local[il][g->hot_ids[i]] = i;
    }
    return 0;
}

static void fill_status(const hearth_ctx *c, hr_hybrid *h) {
    const hr_gpu_plan *p = &h->plan;
    hearth_gpu_status *s = &h->st;
    s->active = true;
    s->used = p->total;
    s->used_attn = p->bytes[HEARTH_GPU_CAT_ATTN], s->used_pred = p->bytes[HEARTH_GPU_CAT_PRED];
    s->used_output = p->bytes[HEARTH_GPU_CAT_OUTPUT];
    s->used_fixed = s->used_attn + s->used_pred + p->bytes[HEARTH_GPU_CAT_NORMS] + s->used_output;
    s->used_kv = p->bytes[HEARTH_GPU_CAT_KV], s->used_scratch = p->bytes[HEARTH_GPU_CAT_SCRATCH];
    s->used_neurons = p->bytes[HEARTH_GPU_CAT_NEURONS] + p->bytes[HEARTH_GPU_CAT_FFN];
    s->layers_attn = p->n_attn, s->layers_whole = p->n_whole, s->output_on_device = p->output;
    for (int32_t il = 0; il < p->n_layer; il++) s->layers_resident += hr_hybrid_step(c, il) == HR_STEP_RESIDENT;
    uint64_t ffn_dev = p->hot_bytes;
    for (int32_t il = 0; il < p->n_layer; il++) {
        s->layers_pred += p->layers[il].pred;
        if (p->layers[il].ffn_dense) ffn_dev += p->neuron_bytes[il] * (uint64_t)p->layers[il].up.n_out;
    }
    s->experts_device = p->n_exp_total, s->experts_total = c->m->hp.n_expert * c->m->hp.n_layer;
    s->experts_split = p->n_xhot_total, s->expert_neurons_device = p->n_xneurons_total;
    s->hot_neurons = p->n_hot_total;
    s->neuron_budget = p->neuron_budget, s->ffn_bytes = p->ffn_bytes;
    s->ffn_share = p->ffn_bytes ? (double)ffn_dev / (double)p->ffn_bytes : 0;
    if (c->m->hp.n_expert) s->ffn_share = s->experts_total ? (double)s->experts_device / (double)s->experts_total : 0;
}

static int setup(hearth_ctx *c, hr_hybrid *h, const hearth_ctx_params *p, hr_err *e) {
    uint64_t bytes = 0;
    if (open_device(c, h, p, e) || budget(h, p, &bytes, e) || make_plan(c, h, p, bytes, e) || upload_all(c, h, e) ||
        host_buffers(c, h, e) || hr_ecache_init(h, c->m, p->moe_cache_policy, e))
        return -1;
    fill_status(c, h);
    return 0;
}

static void release(hr_hybrid *h) {
    if (h->dev) {
        hr_dev *d = h->dev;
        hr_ecache_free(h);
        d->ops->host_free(d, h->h_in), d->ops->host_free(d, h->h_y), d->ops->host_free(d, h->h_idx), d->ops->host_free(d, h->h_mask);
        d->ops->host_free(d, h->h_iota), d->ops->host_free(d, h->h_xe), d->ops->host_free(d, h->h_ye);
        d->ops->host_free(d, h->h_emask);
        hr_dev_close(d);
    }
    for (int32_t il = 0; h->local && il < h->plan.n_layer; il++) free(h->local[il]);
    free(h->local);
    hr_gpu_plan_free(&h->plan);
    h->dev = NULL, h->local = NULL, h->h_in = h->h_y = h->h_xe = h->h_ye = NULL, h->h_idx = h->h_iota = NULL, h->h_mask = NULL;
    h->h_emask = NULL;
}

int hr_hybrid_init(hearth_ctx *c, const hearth_ctx_params *p, hr_err *e) {
    if (p->gpu == HEARTH_GPU_OFF) return 0;
    if (p->gpu < HEARTH_GPU_AUTO || p->gpu > HEARTH_GPU_STANDIN) return hr_errf(e, "unknown GPU mode %d", (int)p->gpu);
    if (p->gpu == HEARTH_GPU_AUTO && !hr_dev_cuda_built()) return 0; /* nothing to try: the CPU, silently */
    hr_hybrid *h = calloc(1, sizeof *h);
    if (!h) return hr_errf(e, "out of memory");
    c->hy = h;
    h->st.act_share = -1;
    if (c->ffn.observer) { /* calibration watches every FFN on the host */
        snprintf(h->st.reason, sizeof h->st.reason, "calibration runs on the CPU");
        return 0;
    }
    if (c->m->n_bundled) { /* the device code reads each matrix's rows packed */
        if (p->gpu != HEARTH_GPU_AUTO)
            return hr_errf(e, "the model's FFN rows were bundled for the CPU at load (%d layers); load it without "
                              "bundling (--no-repack) to run layers on a GPU", c->m->n_bundled);
        hr_err de = {{0}}; /* no device at all is the better reason to give */
        if (hr_dev_cuda_count(&de) == 0) snprintf(h->st.reason, sizeof h->st.reason, "%.250s", de.msg);
        else snprintf(h->st.reason, sizeof h->st.reason, "the FFN rows are bundled for the CPU (--no-repack keeps them for a GPU)");
        return 0;
    }
    hr_err de = {{0}};
    if (!setup(c, h, p, &de)) return 0;
    release(h);
    h->st = (hearth_gpu_status){.act_share = -1};
    if (p->gpu != HEARTH_GPU_AUTO) return hr_errf(e, "%s", de.msg);
    snprintf(h->st.reason, sizeof h->st.reason, "%.250s", de.msg);
    return 0;
}

void hr_hybrid_free(hr_hybrid *h) {
    if (!h) return;
    release(h);
    free(h);
}

bool hearth_gpu_built(void) { return hr_dev_cuda_built(); }
int32_t hearth_gpu_count(hr_err *e) { return hr_dev_cuda_count(e); }

int hearth_gpu_info_get(int32_t index, hearth_gpu_info *out, hr_err *e) {
    hr_dev_desc d;
    if (hr_dev_cuda_describe(index, &d, e)) return -1;
    memset(out, 0, sizeof *out);
    memcpy(out->name, d.name, sizeof out->name);
    out->total_bytes = d.total, out->free_bytes = d.free_b, out->cc_major = d.cc_major, out->cc_minor = d.cc_minor;
    return 0;
}

int hearth_ctx_gpu_status(const hearth_ctx *c, hearth_gpu_status *out) {
    if (!c->hy) {
        *out = (hearth_gpu_status){.act_share = -1};
        return 0;
    }
    *out = c->hy->st;
    out->cache_stage_s = hr_ecache_thread_seconds(c->hy);
    /* every layer's computed neurons, on whichever side they ran */
    for (int32_t il = 0; out->active && il < c->m->hp.n_layer; il++) out->act_total += c->ffn.stats[il].computed;
    return 0;
}
