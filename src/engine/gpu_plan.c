/* The GPU plan (gpu_plan.h): greedy in order of value, every allocation rounded with
 * hr_dev_round and counted before the next is considered, offsets assigned last. */
#include <stdlib.h>
#include <string.h>
#include "gpu_plan.h"
#include "util/size.h"
#include "moe.h"
#include "sparse/trace_cache.h"


const char *hearth_gpu_cat_name(hearth_gpu_cat c) {
    static const char *const n[HEARTH_GPU_CAT_COUNT] = {"scratch", "attention", "KV cache",   "predictors",
                                                        "norms",   "output",    "whole FFNs", "hot neurons"};
    return c >= 0 && c < HEARTH_GPU_CAT_COUNT ? n[c] : "?";
}

static uint64_t R(uint64_t n) { return hr_dev_round(n); }
static uint64_t mat_bytes(const hr_mat *m) { return m->data ? R((uint64_t)m->n_out * m->row_bytes) : 0; }
static uint64_t rows_bytes(const hr_mat *m, int64_t k) { return m->data && k ? R((uint64_t)k * m->row_bytes) : 0; }

typedef struct planner {
    const hr_gpu_plan_in *in;
    hr_gpu_plan *p;
    const hr_hparams *hp;
    uint64_t used;
    bool hot_ok, dense_ok, pred_on;
    bool moe_on;    /* experts may go to the device: their scratch is part of the plan */
    bool emask_on;  /* and predicted mode with expert predictors: split experts' masks too */
    const hr_moeidx *midx; /* static expert placement given (NULL: the greedy order) */
} planner;

static uint64_t kvd(const planner *q) { return (uint64_t)q->hp->n_head_kv * (uint64_t)q->hp->head_dim; }
/* K and V caches for n layers: two allocations, F16 [n_seq][n][n_ctx][kvd]. */
static uint64_t kv_bytes(const planner *q, int32_t n) {
    return n ? 2 * R((uint64_t)q->in->n_seq * (uint64_t)n * (uint64_t)q->in->n_ctx * kvd(q) * 2) : 0;
}

/* The device's attention computes biases, per-head q/k norms and RoPE with frequency
 * factors, YaRN and an attention factor (hr_dev_rope), but has no sliding window, no q
 * scale or soft-cap (L->attn_scaled) and no sinks (gpt-oss): layers that ask for those keep
 * their attention on the host. */
static bool attn_ok(const hr_layer *L) { return !L->swa && !L->attn_scaled && !L->sinks; }
static uint64_t vec_bytes(const float *v, int64_t n) { return v ? R((uint64_t)n * 4) : 0; }
/* The RoPE factors this context uses: uploaded once, with layer 0's attention. */
static const float *rope_ff(const planner *q) { return hr_rope_factors(q->in->m, q->in->n_ctx); }
static uint64_t rope_ff_bytes(const planner *q) { return rope_ff(q) ? R((uint64_t)(q->hp->n_rot / 2) * 4) : 0; }
/* Layer il's attention on the device: its four matrices and vectors (+ the factors). */
static uint64_t attn_bytes(const planner *q, int il) {
    const hr_layer *L = &q->in->m->layers[il];
    const int64_t qd = (int64_t)q->hp->n_head * q->hp->head_dim, kd = (int64_t)kvd(q), hd = q->hp->head_dim;
    return mat_bytes(&L->wq) + mat_bytes(&L->wk) + mat_bytes(&L->wv) + mat_bytes(&L->wo) + vec_bytes(L->bq, qd) +
           vec_bytes(L->bk, kd) + vec_bytes(L->bv, kd) + vec_bytes(L->bo, q->hp->n_embd) + vec_bytes(L->q_norm, hd) +
           vec_bytes(L->k_norm, hd) + (il == 0 ? rope_ff_bytes(q) : 0);
}
static uint64_t pred_bytes(const hr_layer *L) { return mat_bytes(&L->ffn.fc1) + mat_bytes(&L->ffn.fc2); }
static uint64_t dense_ffn_bytes(const hr_layer *L) { return mat_bytes(&L->ffn.gate) + mat_bytes(&L->ffn.up) + mat_bytes(&L->ffn.down); }
static uint64_t hot_rows_bytes(const hr_layer *L, int64_t k) {
    return rows_bytes(&L->ffn.gate, k) + rows_bytes(&L->ffn.up, k) + rows_bytes(&L->ffn.down_t, k);
}

static int64_t max_rank(const hearth_model *m) {
    int64_t r = 1;
    for (int il = 0; il < m->hp.n_layer; il++)
        if (m->layers[il].ffn.fc1.n_out > r) r = m->layers[il].ffn.fc1.n_out;
    return r;
}

/* Scratch buffers in hr_gpu_scratch order; offsets relative to the arena start. The
 * expert buffers exist only when experts may go to the device (experts true). */
static uint64_t scratch_layout(const hearth_model *m, int32_t n_batch, bool experts, bool emask, hr_gpu_scratch *s) {
    const hr_hparams *hp = &m->hp;
    const uint64_t T = (uint64_t)n_batch, d = (uint64_t)hp->n_embd, ff = (uint64_t)hp->n_ff;
    const uint64_t qd = (uint64_t)hp->n_head * hp->head_dim, kd = (uint64_t)hp->n_head_kv * hp->head_dim;
    const uint64_t X = experts ? 1 : 0, ke = X * (uint64_t)hp->n_expert_used, fe = X * (uint64_t)hp->n_ff_exp;
    const uint64_t mk = emask ? T * ke * fe : 0;
    const uint64_t sizes[] = {T * d * 4, T * d * 4, T * qd * 4, T * qd * 4, T * kd * 4, T * kd * 4, T * d * 4,
                              T * (uint64_t)max_rank(m) * 4, T * ff * (uint64_t)hr_model_pred_blocks(m) * 4, T * ff * 4, T * ff * 4, T * ff * 4,
                              T * d * 4, T * (uint64_t)hp->n_vocab * 4, ff * 4, T * ff,
                              T * ke * d * 4, T * ke * d * 4, T * fe * 4, T * fe * 4, T * fe * 4, fe * 4, mk};
    uint64_t *offs[] = {&s->x, &s->xp, &s->q, &s->att, &s->k, &s->v, &s->o, &s->ph, &s->s, &s->g, &s->u, &s->h,
                        &s->y, &s->logits, &s->idx, &s->mask, &s->xe, &s->ye, &s->ge, &s->ue, &s->he, &s->eidx, &s->emask};
    uint64_t off = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        *offs[i] = off;
        off += R(sizes[i]);
    }
    return off;
}

static bool fits(const planner *q, uint64_t more) { return more <= q->in->budget - q->used; }

/* What a device-resident layer (hybrid_run.c) computes besides the common tensors: a fused
 * QKV or gate|up (row views), RoPE frequency factors, q/k/v/output biases and per-head q/k
 * norms. An architecture whose entry asks for anything else runs its layers on the host or
 * split, never resident. */
#define RESIDENT_TENSORS                                                                                               \
    (HR_AT_FUSED_QKV | HR_AT_FUSED_GATE_UP | HR_AT_ROPE_FREQS | HR_AT_ROPE_LONG_SHORT | HR_AT_QKV_BIAS | HR_AT_O_BIAS |  \
     HR_AT_QK_NORM)

/* A whole layer can run device-resident: every neuron computed (dense FFN matrices, or a
 * PowerInfer file's neuron rows in dense mode; never with a predictor), serial blocks,
 * RMSNorm without bias, nothing in its architecture entry the device path lacks. Its two
 * norm vectors then go with it. */
static bool norms_ok(const planner *q, int il) {
    const hr_layer *L = &q->in->m->layers[il];
    const hr_arch *a = q->hp->arch;
    return !a->parallel && a->norm == HR_NORM_RMS && !(a->tensors & ~(uint32_t)RESIDENT_TENSORS) && L->attn_norm &&
           L->ffn_norm && !L->attn_norm_b && !L->ffn_norm_b;
}
static bool resident_ok(const planner *q, int il) {
    const bool all_neurons = q->hot_ok ? q->in->mode == HEARTH_FFN_DENSE : q->dense_ok;
    return all_neurons && !q->pred_on && norms_ok(q, il);
}
static uint64_t norm_bytes(const planner *q) { return 2 * R((uint64_t)q->hp->n_embd * 4); }

/* Whole layer il: attention (+KV), predictor, the entire FFN. Returns its bytes. */
static uint64_t whole_bytes(const planner *q, int il) {
    const hr_layer *L = &q->in->m->layers[il];
    uint64_t b = attn_bytes(q, il) + kv_bytes(q, il + 1) - kv_bytes(q, il);
    if (q->pred_on) b += pred_bytes(L);
    if (q->hot_ok) b += hot_rows_bytes(L, q->hp->n_ff);
    else if (q->dense_ok) b += dense_ffn_bytes(L);
    if (resident_ok(q, il)) b += norm_bytes(q);
    return b;
}

static int take_whole(planner *q, int il, hr_err *e) {
    hr_gpu_layer *g = &q->p->layers[il];
    q->used += whole_bytes(q, il);
    g->attn = true, g->pred = q->pred_on;
    if (q->hot_ok) {
        if (!(g->hot_ids = malloc(sizeof(int32_t) * (size_t)q->hp->n_ff))) return hr_errf(e, "out of memory");
        for (int32_t j = 0; j < q->hp->n_ff; j++) g->hot_ids[j] = j;
        g->n_hot = q->hp->n_ff;
    } else g->ffn_dense = q->dense_ok;
    g->norms = resident_ok(q, il);
    q->p->n_attn = il + 1, q->p->n_whole = il + 1;
    return 0;
}

static int place_whole_layers(planner *q, int32_t want, hr_err *e) {
    const hearth_model *m = q->in->m;
    int32_t n = want < q->hp->n_layer ? want : q->hp->n_layer;
    for (int il = 0; il < n; il++) {
        if (!attn_ok(&m->layers[il]))
            return hr_errf(e, "layer %d's attention has a sliding window or a q scale/soft-cap (%s), which the device path does not support; use -ngl 0",
                           il, m->hp.arch->name);
        if (!fits(q, whole_bytes(q, il))) {
            uint64_t need = q->used;
            for (int k = il; k < n; k++) need += whole_bytes(q, k);
            char sz[HR_SIZE_STR];
            return hr_errf(e, "-ngl %d needs %llu bytes of GPU memory but the budget is %llu bytes (%s); it holds %d whole layers",
                           want, (unsigned long long)need, (unsigned long long)q->in->budget, hr_size_str(q->in->budget, sz), il);
        }
        if (take_whole(q, il, e)) return -1;
    }
    return 0;
}

static bool place_output(planner *q) {
    const uint64_t b = mat_bytes(&q->in->m->output);
    if (!b || !fits(q, b)) return false;
    q->p->output = true, q->used += b;
    return true;
}

/* Dense parts of a PowerInfer file, strictly in order of value: attention, predictors,
 * output. The first unit that does not fit ends the placement, so a smaller budget
 * always drops the least valuable parts first. Returns whether everything fit. */
static bool place_dense_parts(planner *q) {
    const hearth_model *m = q->in->m;
    for (int il = 0; il < q->hp->n_layer && attn_ok(&m->layers[il]); il++) {
        uint64_t b = attn_bytes(q, il) + kv_bytes(q, il + 1) - kv_bytes(q, il);
        if (!fits(q, b)) return false;
        q->used += b, q->p->layers[il].attn = true, q->p->n_attn = il + 1;
    }
    for (int il = 0; q->pred_on && il < q->hp->n_layer; il++) {
        uint64_t b = pred_bytes(&m->layers[il]);
        if (!fits(q, b)) return false;
        q->used += b, q->p->layers[il].pred = true;
    }
    /* norms of layers with attention and predictor on the device: the two then share one
     * round trip (norm, attention, residual add, norm, predictor) */
    for (int il = 0; q->pred_on && il < q->hp->n_layer; il++) {
        hr_gpu_layer *g = &q->p->layers[il];
        if (!g->attn || !g->pred || !norms_ok(q, il)) continue;
        if (!fits(q, norm_bytes(q))) return false;
        q->used += norm_bytes(q), g->norms = true;
    }
    return place_output(q) || !mat_bytes(&m->output);
}

/* Hot neurons: the index's first k per layer, k scaled down evenly when the index asks
 * for more than the neuron budget. */
static int place_neurons(planner *q, hr_err *e) {
    hr_gpu_plan *p = q->p;
    const hr_gpuidx *idx = q->in->idx;
    const int32_t nl = q->hp->n_layer, ff = q->hp->n_ff;
    const uint64_t slack = (uint64_t)nl * 3 * (HR_DEV_ALIGN - 1), left = q->in->budget - q->used;
    p->neuron_budget = left > slack ? left - slack : 0;
    if (!idx) return 0;
    if (idx->n_layer != nl || idx->n_ff != ff)
        return hr_errf(e, "GPU index has %d layers of %d neurons, the model %d of %d", idx->n_layer, idx->n_ff, nl, ff);
    uint64_t want = 0;
    for (int32_t il = 0; il < nl; il++) want += (uint64_t)hr_gpuidx_bucket(idx, il, NULL) * p->neuron_bytes[il];
    const double scale = want > p->neuron_budget ? (double)p->neuron_budget / (double)want : 1.0;
    for (int32_t il = 0; il < nl; il++) {
        hr_gpu_layer *g = &p->layers[il];
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)ff);
        if (!ids) return hr_errf(e, "out of memory");
        int32_t nb = hr_gpuidx_bucket(idx, il, ids);
        g->n_hot = scale < 1.0 ? (int32_t)((double)nb * scale) : nb;
        g->hot_ids = ids;
        q->used += hot_rows_bytes(&q->in->m->layers[il], g->n_hot);
    }
    return 0;
}

static uint64_t take(uint64_t *off, uint64_t n) {
    uint64_t o = *off;
    *off += R(n);
    return o;
}

/* An F32 vector of n elements where v is present (offset 0 where not: never read). */
static uint64_t vec_at(const float *v, int64_t n, uint64_t *off, uint64_t *cat) {
    if (!v) return 0;
    *cat += R((uint64_t)n * 4);
    return take(off, (uint64_t)n * 4);
}

static hr_dmat dmat(const hr_mat *m, int64_t rows, uint64_t *off, uint64_t *cat) {
    hr_dmat d = {m->type, m->n_in, rows, m->row_bytes, 0};
    if (!m->data || !rows) return (hr_dmat){0}; /* absent (no gate): n_out 0 */
    d.off = take(off, (uint64_t)rows * m->row_bytes);
    *cat += R((uint64_t)rows * m->row_bytes);
    return d;
}

static void layout_experts(planner *q, int il, uint64_t *off);

/* Offsets of everything chosen, category totals. */
static int layout(planner *q, hr_err *e) {
    hr_gpu_plan *p = q->p;
    const hearth_model *m = q->in->m;
    uint64_t off = scratch_layout(m, q->in->n_batch, q->moe_on, q->emask_on, &p->sc), *B = p->bytes;
    B[HEARTH_GPU_CAT_SCRATCH] = off;
    p->kv_layers = p->n_attn;
    const uint64_t kvb = kv_bytes(q, p->n_attn) / 2;
    if (kvb) p->k_cache = take(&off, kvb), p->v_cache = take(&off, kvb), B[HEARTH_GPU_CAT_KV] = 2 * kvb;
    for (int il = 0; il < q->hp->n_layer; il++) {
        const hr_layer *L = &m->layers[il];
        hr_gpu_layer *g = &p->layers[il];
        uint64_t *A = &B[HEARTH_GPU_CAT_ATTN], *P = &B[HEARTH_GPU_CAT_PRED];
        if (g->attn) {
            const hr_hparams *hp = q->hp;
            const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kd = (int64_t)kvd(q);
            g->wq = dmat(&L->wq, L->wq.n_out, &off, A), g->wk = dmat(&L->wk, L->wk.n_out, &off, A);
            g->wv = dmat(&L->wv, L->wv.n_out, &off, A), g->wo = dmat(&L->wo, L->wo.n_out, &off, A);
            g->bq = vec_at(L->bq, qd, &off, A), g->bk = vec_at(L->bk, kd, &off, A), g->bv = vec_at(L->bv, kd, &off, A);
            g->bo = vec_at(L->bo, hp->n_embd, &off, A);
            g->q_norm = vec_at(L->q_norm, hp->head_dim, &off, A), g->k_norm = vec_at(L->k_norm, hp->head_dim, &off, A);
            if (il == 0 && (p->rope_ff_src = rope_ff(q))) p->rope_ff = vec_at(p->rope_ff_src, hp->n_rot / 2, &off, A);
        }
        if (g->pred) g->fc1 = dmat(&L->ffn.fc1, L->ffn.fc1.n_out, &off, P), g->fc2 = dmat(&L->ffn.fc2, L->ffn.fc2.n_out, &off, P);
        if (g->norms) {
            const uint64_t nb = (uint64_t)q->hp->n_embd * 4;
            g->attn_norm = take(&off, nb), g->ffn_norm = take(&off, nb), B[HEARTH_GPU_CAT_NORMS] += norm_bytes(q);
        }
        if (g->ffn_dense) {
            g->gate = dmat(&L->ffn.gate, L->ffn.gate.n_out, &off, &B[HEARTH_GPU_CAT_FFN]);
            g->up = dmat(&L->ffn.up, L->ffn.up.n_out, &off, &B[HEARTH_GPU_CAT_FFN]);
            g->down = dmat(&L->ffn.down, L->ffn.down.n_out, &off, &B[HEARTH_GPU_CAT_FFN]);
        } else if (g->n_hot) {
            uint64_t before = B[HEARTH_GPU_CAT_NEURONS];
            g->gate = dmat(&L->ffn.gate, g->n_hot, &off, &B[HEARTH_GPU_CAT_NEURONS]);
            g->up = dmat(&L->ffn.up, g->n_hot, &off, &B[HEARTH_GPU_CAT_NEURONS]);
            g->down = dmat(&L->ffn.down_t, g->n_hot, &off, &B[HEARTH_GPU_CAT_NEURONS]);
            g->hot_bytes = B[HEARTH_GPU_CAT_NEURONS] - before;
            p->hot_bytes += (uint64_t)g->n_hot * p->neuron_bytes[il], p->n_hot_total += g->n_hot;
        }
    }
    for (int il = 0; il < q->hp->n_layer; il++) layout_experts(q, il, &off);
    for (int il = 0; il < q->hp->n_layer; il++) hr_plan_xhot_layout(q->in, p, il, &off);
    if (p->output) p->out = dmat(&m->output, m->output.n_out, &off, &B[HEARTH_GPU_CAT_OUTPUT]);
    p->total = off;
    if (off != q->used || off > p->budget) /* the greedy and the layout must agree to the byte */
        return hr_errf(e, "internal error: GPU plan lays out %llu bytes, accounted %llu, budget %llu", (unsigned long long)off,
                       (unsigned long long)q->used, (unsigned long long)p->budget);
    return 0;
}

/* FFN mode threshold splits a gated FFN with ffn_down_t by neurons (hybrid_ffn_thr.c), on a
 * PowerInfer file or a dense one ('hearth calibrate --target-sparsity' writes down_t); so
 * does predicted mode on such a file (its predictor then picks only the cold neurons). */
static bool thr_hot_ok(const planner *q) {
    const hearth_model *m = q->in->m;
    const hearth_ffn_mode mode = q->in->mode;
    return (mode == HEARTH_FFN_THRESHOLD || mode == HEARTH_FFN_PREDICTED) && m->ffn_thr && m->hp.has_gate && !m->hp.n_expert;
}

/* Whole FFN of every layer of a dense file on the device; neurons of PowerInfer files. */
static void model_caps(planner *q) {
    const hearth_model *m = q->in->m;
    const hearth_ffn_mode mode = q->in->mode;
    bool down_t = true, down = true, bias = false, pred = true;
    for (int il = 0; il < q->hp->n_layer; il++) {
        const hr_ffn_weights *f = &m->layers[il].ffn;
        down_t &= f->down_t.data != NULL, down &= f->down.data != NULL, bias |= f->b_up || f->b_down;
        pred &= f->fc1.data && f->fc2.data;
    }
    q->hot_ok = down_t && !bias && (mode == HEARTH_FFN_PREDICTED || mode == HEARTH_FFN_DENSE || thr_hot_ok(q));
    q->dense_ok = down && !bias;
    q->pred_on = pred && mode == HEARTH_FFN_PREDICTED;
}

static int neuron_sizes(planner *q, hr_err *e) {
    hr_gpu_plan *p = q->p;
    p->neuron_bytes = calloc((size_t)q->hp->n_layer, sizeof *p->neuron_bytes);
    if (!p->neuron_bytes) return hr_errf(e, "out of memory");
    for (int il = 0; il < q->hp->n_layer; il++) {
        const hr_ffn_weights *f = &q->in->m->layers[il].ffn;
        const hr_mat *dn = f->down_t.data ? &f->down_t : &f->down;
        p->neuron_bytes[il] = (f->gate.data ? f->gate.row_bytes : 0) + f->up.row_bytes +
                              (f->down_t.data ? f->down_t.row_bytes : (uint64_t)(dn->n_out * dn->row_bytes) / (uint64_t)q->hp->n_ff);
        p->ffn_bytes += p->neuron_bytes[il] * (uint64_t)q->hp->n_ff;
    }
    return 0;
}

const char *hr_step_kind_name(hr_step_kind k) {
    static const char *const n[HR_STEP_COUNT] = {"host", "attention", "attention+predictor", "resident", "split FFN", "split MoE"};
    return k >= 0 && k < HR_STEP_COUNT ? n[k] : "?";
}

/* One step per layer from the parts placed: the norms go only with fused attention and
 * predictor (predicted mode) or with a resident whole layer (never with a predictor), so
 * they tell the two apart. Mixture-of-experts layers with experts on the device split them. */
static hr_step_kind step_of(const hr_gpu_layer *g, const hr_layer *L) {
    if (L->moe.router.data) return g->n_exp || g->n_xhot ? HR_STEP_SPLIT_MOE : g->attn ? HR_STEP_ATTN : HR_STEP_HOST;
    if (g->norms) return g->pred ? HR_STEP_ATTN_PRED : HR_STEP_RESIDENT;
    if (g->pred || g->n_hot || g->ffn_dense) return HR_STEP_SPLIT_FFN;
    return g->attn ? HR_STEP_ATTN : HR_STEP_HOST;
}

/* ---- mixtures of experts ---- */

/* The device computes an expert's products, its gated (or gpt-oss's clamped) activation and
 * its biases, all three or none: each is added after its product. */
static bool experts_ok(const planner *q, int il) {
    const hr_moe_weights *w = &q->in->m->layers[il].moe;
    const bool bias = w->gate_b || w->up_b || w->down_b, all = w->gate_b && w->up_b && w->down_b;
    return w->router.data && w->gate.data && (!bias || all);
}
/* Layers whose experts the plan may place: from n_cpu_moe up to -ngl's limit. */
static int32_t moe_first(const planner *q) { return q->in->n_cpu_moe > 0 ? q->in->n_cpu_moe : 0; }
static int32_t moe_end(const planner *q) {
    const int32_t n = q->hp->n_layer, g = q->in->n_gpu_layers;
    return g > 0 && g < n ? g : n;
}
static bool experts_possible(const planner *q) {
    if (!q->hp->n_expert) return false;
    for (int32_t il = moe_first(q); il < moe_end(q); il++)
        if (experts_ok(q, il)) return true;
    return false;
}
static const hr_mat *down_of(const hr_moe_weights *w) { return w->down.data ? &w->down : &w->down_t; }
/* One expert's device bytes: three allocations (expert 0's views have each expert's shape). */
static uint64_t expert_bytes(const planner *q, int il) {
    const hr_moe_weights *w = &q->in->m->layers[il].moe;
    const int64_t ff = q->hp->n_ff_exp, d = q->hp->n_embd;
    const uint64_t bias = w->gate_b ? R((uint64_t)ff * 4) * 2 + R((uint64_t)d * 4) : 0;
    return mat_bytes(&w->gate) + mat_bytes(&w->up) + mat_bytes(down_of(w)) + bias;
}

typedef struct exp_cand {
    int32_t il, x;
    double value; /* routed tokens per byte */
} exp_cand;

/* Most routed tokens per byte first; ties: the lower layer, then the lower expert. */
static int cand_cmp(const void *a, const void *b) {
    const exp_cand *u = a, *v = b;
    if (u->value != v->value) return u->value > v->value ? -1 : 1;
    if (u->il != v->il) return u->il < v->il ? -1 : 1;
    return (u->x > v->x) - (u->x < v->x);
}

static int mark_expert(planner *q, int il, int32_t x, hr_err *e) {
    hr_gpu_layer *g = &q->p->layers[il];
    const int32_t ne = q->hp->n_expert;
    if (!g->exp_local) {
        if (!(g->exp_local = malloc(sizeof(int32_t) * (size_t)ne)) || !(g->exps = calloc((size_t)ne, sizeof *g->exps)))
            return hr_errf(e, "out of memory");
        for (int32_t i = 0; i < ne; i++) g->exp_local[i] = -1;
    }
    g->exp_local[x] = 0; /* numbered in id order by layout_experts */
    g->n_exp++, q->p->n_exp_total++;
    return 0;
}

/* Whole experts by routed frequency per byte (uniform without statistics) while they fit;
 * the first that does not fit ends the placement, so a smaller budget keeps a prefix of
 * the same order. */
static int place_experts(planner *q, hr_err *e) {
    const int32_t ne = q->hp->n_expert, a = moe_first(q), b = moe_end(q);
    if (a >= b) return 0;
    exp_cand *c = malloc(sizeof *c * (size_t)(b - a) * (size_t)ne);
    if (!c) return hr_errf(e, "out of memory");
    size_t n = 0;
    for (int32_t il = a; il < b; il++) {
        if (!experts_ok(q, il)) continue;
        const double bytes = (double)expert_bytes(q, il);
        for (int32_t x = 0; x < ne; x++) {
            const double f = q->in->expert_freq ? (double)q->in->expert_freq[(size_t)il * (size_t)ne + (size_t)x] : 1.0;
            c[n++] = (exp_cand){il, x, f / bytes};
        }
    }
    qsort(c, n, sizeof *c, cand_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const uint64_t eb = expert_bytes(q, c[i].il);
        if (!fits(q, eb)) break;
        q->used += eb;
        rc = mark_expert(q, c[i].il, c[i].x, e);
    }
    free(c);
    return rc;
}

/* Layers whose host experts may put hot neurons on the device (gpu_plan_xhot.c): the
 * statistics' firing counts, ReLU-family experts (an inactive neuron's output is exactly
 * zero, so the CPU may compute the rest sparsely, as --ffn exact) with a down matrix,
 * dense, exact or predicted mode (there the device masks its hot neurons by the expert's
 * predictor, which the host runs first; not beside an expert cache, which has no masks). */
static bool xhot_allowed(const planner *q, int il) {
    const hr_moe_weights *w = &q->in->m->layers[il].moe;
    const hearth_ffn_mode md = q->in->mode;
    return (q->in->moe_cache <= 0 || md != HEARTH_FFN_PREDICTED) && hr_act_relu_family(q->hp->act) &&
           (md == HEARTH_FFN_DENSE || md == HEARTH_FFN_EXACT || md == HEARTH_FFN_PREDICTED) &&
           experts_ok(q, il) && hr_xhot_down(w).n_out > 0;
}
static bool xhot_layer_ok(const planner *q, int il) { return q->in->expert_neuron_freq && xhot_allowed(q, il); }

/* Hot neurons of the host experts of the layers xhot_layer_ok allows, within what is left. */
static int place_xhot(planner *q, hr_err *e) {
    const int32_t nl = q->hp->n_layer, a = moe_first(q), b = moe_end(q);
    bool *ok = calloc((size_t)nl, sizeof *ok);
    if (!ok) return hr_errf(e, "out of memory");
    bool any = false;
    for (int32_t il = a; il < b; il++) any |= ok[il] = xhot_layer_ok(q, il);
    const int rc = any ? hr_plan_xhot_place(q->in, q->p, ok, &q->used, e) : 0;
    free(ok);
    return rc;
}

/* The expert cache: n slots in every layer that may place experts, required; each layer
 * starts with its n most routed experts (uniform: the lowest ids), which the cache then
 * replaces by observed use. What is left holds hot neurons of the other experts (dense and
 * exact mode): an expert whose copy lands in a slot runs whole there, its hot neurons idle. */
static int place_slots(planner *q, hr_err *e) {
    const int32_t ne = q->hp->n_expert, a = moe_first(q), b = moe_end(q);
    const int32_t n = q->in->moe_cache < ne ? q->in->moe_cache : ne;
    uint64_t need = 0, per = 0;
    int32_t layers = 0;
    for (int32_t il = a; il < b; il++)
        if (experts_ok(q, il)) per += expert_bytes(q, il), layers++;
    if (!layers) return 0;
    need = per * (uint64_t)n;
    if (!fits(q, need)) {
        const uint64_t left = q->in->budget - q->used;
        char sz[HR_SIZE_STR];
        return hr_errf(e, "--moe-cache %d needs %llu bytes of GPU memory for %d expert slots in each of %d layers, but the "
                          "budget leaves %llu bytes (%s) after scratch, attention and output: it holds %llu slots per layer",
                       q->in->moe_cache, (unsigned long long)need, n, layers, (unsigned long long)left, hr_size_str(left, sz),
                       (unsigned long long)(left / per));
    }
    uint64_t *freq = malloc(sizeof *freq * (size_t)ne);
    int32_t *top = malloc(sizeof *top * (size_t)n);
    int rc = freq && top ? 0 : hr_errf(e, "out of memory");
    for (int32_t il = a; !rc && il < b; il++) {
        if (!experts_ok(q, il)) continue;
        for (int32_t x = 0; x < ne; x++) freq[x] = q->in->expert_freq ? q->in->expert_freq[(size_t)il * (size_t)ne + (size_t)x] : 0;
        hr_cache_top(freq, ne, n, top);
        for (int32_t i = 0; i < n && !rc; i++) rc = mark_expert(q, il, top[i], e);
        q->used += (uint64_t)n * expert_bytes(q, il);
    }
    free(freq), free(top);
    if (!rc) q->p->cache_slots = n;
    return rc ? rc : place_xhot(q, e);
}


/* An expert index's whole experts, each where this context may place one and within the budget. */
static int place_indexed_experts(planner *q, hr_err *e) {
    const hr_moeidx *x = q->midx;
    const int32_t nl = q->hp->n_layer, ne = q->hp->n_expert, a = moe_first(q), b = moe_end(q);
    if (x->n_layer != nl || x->n_expert != ne || x->n_ff != q->hp->n_ff_exp)
        return hr_errf(e, "the expert index is for %d layers of %d experts of %d neurons, the model has %d of %d of %d",
                       x->n_layer, x->n_expert, x->n_ff, nl, ne, q->hp->n_ff_exp);
    for (int32_t il = 0; il < nl; il++)
        for (int32_t k = 0; k < ne; k++) {
            if (!x->whole[(size_t)il * (size_t)ne + (size_t)k]) continue;
            if (il < a || il >= b || !experts_ok(q, il))
                return hr_errf(e, "layer %d's expert %d is whole on the device, but on the host in this context "
                                  "(--n-cpu-moe, -ngl)", il, k);
            if (!fits(q, expert_bytes(q, il)))
                return hr_errf(e, "its experts need more than the %llu bytes left for them",
                               (unsigned long long)q->p->expert_budget);
            q->used += expert_bytes(q, il);
            if (mark_expert(q, il, k, e)) return -1;
        }
    return 0;
}

/* Whole experts, then hot neurons of the experts left on the host, in one arena: by the
 * counts, or as an expert index says. */
static int place_experts_neurons(planner *q, hr_err *e) {
    const hr_moeidx *x = q->midx;
    q->p->expert_budget = q->in->budget - q->used;
    if (x ? place_indexed_experts(q, e) : place_experts(q, e)) return -1;
    if (!x) return place_xhot(q, e);
    const int32_t nl = q->hp->n_layer, a = moe_first(q), b = moe_end(q);
    bool *ok = calloc((size_t)nl, sizeof *ok);
    if (!ok) return hr_errf(e, "out of memory");
    for (int32_t il = a; il < b; il++) ok[il] = xhot_allowed(q, il);
    const int rc = hr_plan_xhot_given(q->in, q->p, ok, x->neurons, &q->used, e);
    free(ok);
    return rc;
}

uint64_t hr_gpu_plan_expert_fingerprint(const hearth_model *m) {
    planner q = {.hp = &m->hp};
    hr_gpu_plan_in in = {.m = m};
    q.in = &in;
    uint64_t f = 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++)
        if (m->layers[il].moe.router.data) f += expert_bytes(&q, il);
    return f;
}

int hr_gpu_plan_moeidx(const hr_gpu_plan *p, const hearth_model *m, hr_moeidx *out, hr_err *e) {
    const int32_t ne = m->hp.n_expert, ff = m->hp.n_ff_exp;
    if (hr_moeidx_init(out, p->n_layer, ne, ff, e)) return -1;
    out->capacity = p->expert_budget, out->expert_bytes = hr_gpu_plan_expert_fingerprint(m);
    for (int32_t il = 0; il < p->n_layer; il++) {
        const hr_gpu_layer *g = &p->layers[il];
        for (int32_t i = 0; i < g->n_exp; i++) out->whole[(size_t)il * (size_t)ne + (size_t)g->exps[i].id] = 1;
        for (int32_t i = 0; i < g->n_xhot; i++) {
            uint8_t *on = out->neurons + ((size_t)il * (size_t)ne + (size_t)g->xhot[i].id) * (size_t)ff;
            for (int32_t k = 0; k < g->xhot[i].n_hot; k++) on[g->xhot[i].hot_ids[k]] = 1;
        }
    }
    return 0;
}

/* Attention of layer il (+ its KV) when it fits; false when it does not. */
static bool take_attn(planner *q, int il) {
    const uint64_t b = attn_bytes(q, il) + kv_bytes(q, il + 1) - kv_bytes(q, il);
    if (!fits(q, b)) return false;
    q->used += b, q->p->layers[il].attn = true, q->p->n_attn = il + 1;
    return true;
}

/* Dense parts as for PowerInfer files (attention layer by layer, the output; the router and
 * norms stay on the host, which needs the routing anyway), then experts. -ngl N: attention
 * of layers 0..N-1 must fit (N > n_layer: and the output), and only their experts move. */
static int place_moe_ngl(planner *q, hr_err *e) {
    const hearth_model *m = q->in->m;
    const int32_t nl = q->hp->n_layer, ngl = q->in->n_gpu_layers;
    for (int il = 0; il < nl && il < ngl; il++) {
        if (!attn_ok(&m->layers[il]))
            return hr_errf(e, "layer %d's attention has a sliding window, sinks or a q scale/soft-cap (%s), which the device path does not support; use -ngl 0",
                           il, m->hp.arch->name);
        if (take_attn(q, il)) continue;
        uint64_t need = q->used;
        for (int k = il; k < nl && k < ngl; k++) need += attn_bytes(q, k) + kv_bytes(q, k + 1) - kv_bytes(q, k);
        char sz[HR_SIZE_STR];
        return hr_errf(e, "-ngl %d needs %llu bytes of GPU memory for attention and KV cache but the budget is %llu bytes (%s); it holds %d layers' attention",
                       ngl, (unsigned long long)need, (unsigned long long)q->in->budget, hr_size_str(q->in->budget, sz), il);
    }
    if (ngl > nl) place_output(q);
    return q->in->moe_cache > 0 ? place_slots(q, e) : place_experts_neurons(q, e);
}

static int place_moe(planner *q, hr_err *e) {
    const hearth_model *m = q->in->m;
    const int32_t nl = q->hp->n_layer;
    if (q->in->n_gpu_layers > 0) return place_moe_ngl(q, e);
    /* out of budget: nothing less valuable fits either (a cache asked for says so) */
    const bool cache = q->in->moe_cache > 0;
    for (int il = 0; il < nl && attn_ok(&m->layers[il]); il++)
        if (!take_attn(q, il)) return cache ? place_slots(q, e) : 0;
    if (!place_output(q) && mat_bytes(&m->output)) return cache ? place_slots(q, e) : 0;
    return cache ? place_slots(q, e) : place_experts_neurons(q, e);
}

/* Offsets of layer il's device experts, in id order (local index i = i-th placed id). */
static void layout_experts(planner *q, int il, uint64_t *off) {
    hr_gpu_layer *g = &q->p->layers[il];
    const hr_moe_weights *w = &q->in->m->layers[il].moe;
    uint64_t *F = &q->p->bytes[HEARTH_GPU_CAT_FFN];
    if (!g->exp_local) return;
    int32_t i = 0;
    for (int32_t x = 0; x < q->hp->n_expert; x++) {
        if (g->exp_local[x] < 0) continue;
        hr_gpu_expert *d = &g->exps[i];
        d->id = x, d->down_t = !w->down.data, d->bias = w->gate_b != NULL;
        d->gate = dmat(&w->gate, w->gate.n_out, off, F), d->up = dmat(&w->up, w->up.n_out, off, F);
        d->down = dmat(down_of(w), down_of(w)->n_out, off, F);
        d->end = d->down.off + (uint64_t)d->down.n_out * d->down.row_bytes;
        if (d->bias) {
            const uint64_t fb = (uint64_t)q->hp->n_ff_exp * 4, db = (uint64_t)q->hp->n_embd * 4;
            d->gb = take(off, fb), d->ub = take(off, fb), d->db = take(off, db);
            *F += R(fb) * 2 + R(db);
            d->end = d->db + db;
        }
        g->exp_local[x] = i++;
    }
}

/* Whole layers (-ngl, dense files) or dense parts then hot neurons (PowerInfer files, and
 * files with ffn_down_t in place of ffn_down, which have no whole layers to place). */
static int place(planner *q, hr_err *e) {
    const hearth_model *m = q->in->m;
    int rc = 0;
    if (m->hp.n_expert) return place_moe(q, e);
    if (q->in->n_gpu_layers > 0) {
        rc = place_whole_layers(q, q->in->n_gpu_layers, e);
        if (!rc && q->in->n_gpu_layers > m->hp.n_layer) place_output(q);
    } else if (!m->sparse_file && q->dense_ok && !(q->hot_ok && thr_hot_ok(q))) {
        int il = 0;
        while (!rc && q->dense_ok && il < m->hp.n_layer && attn_ok(&m->layers[il]) && fits(q, whole_bytes(q, il)))
            rc = take_whole(q, il++, e);
        if (!rc && il == m->hp.n_layer) place_output(q);
    } else if (place_dense_parts(q) && q->hot_ok) {
        rc = place_neurons(q, e);
    }
    return rc;
}

int hr_gpu_plan_make(const hr_gpu_plan_in *in, hr_gpu_plan *p, hr_err *e) { return hr_gpu_plan_make_indexed(in, NULL, p, e); }

int hr_gpu_plan_make_indexed(const hr_gpu_plan_in *in, const hr_moeidx *x, hr_gpu_plan *p, hr_err *e) {
    memset(p, 0, sizeof *p);
    const hearth_model *m = in->m;
    if (in->n_ctx < 1 || in->n_seq < 1 || in->n_batch < 1 || in->n_gpu_layers < 0)
        return hr_errf(e, "bad GPU plan shape (n_ctx %d, sequences %d, batch %d, -ngl %d)", in->n_ctx, in->n_seq, in->n_batch,
                       in->n_gpu_layers);
    planner q = {.in = in, .p = p, .hp = &m->hp, .midx = x};
    p->n_layer = m->hp.n_layer, p->budget = in->budget;
    p->layers = calloc((size_t)m->hp.n_layer, sizeof *p->layers);
    if (!p->layers) return hr_errf(e, "out of memory");
    if (neuron_sizes(&q, e)) return -1;
    model_caps(&q);
    p->hot_ok = q.hot_ok;
    q.moe_on = experts_possible(&q);
    q.emask_on = q.moe_on && in->mode == HEARTH_FFN_PREDICTED && in->moe_cache <= 0 && hr_moe_has_predictors(m);
    q.used = scratch_layout(m, in->n_batch, q.moe_on, q.emask_on, &p->sc);
    p->expert_masks = q.emask_on;
    char sz[HR_SIZE_STR];
    if (q.used > in->budget)
        return hr_errf(e, "GPU budget too small: it leaves %llu bytes (%s) beyond the device's own overhead, and "
                          "device scratch for %d tokens needs %llu bytes (raise --vram-budget or lower -b)",
                       (unsigned long long)in->budget, hr_size_str(in->budget, sz), in->n_batch, (unsigned long long)q.used);
    if (place(&q, e) || layout(&q, e)) return -1;
    for (int il = 0; il < m->hp.n_layer; il++) p->layers[il].step = step_of(&p->layers[il], &m->layers[il]);
    return 0;
}

void hr_gpu_plan_free(hr_gpu_plan *p) {
    if (!p) return;
    for (int32_t il = 0; p->layers && il < p->n_layer; il++)
        free(p->layers[il].hot_ids), free(p->layers[il].exps), free(p->layers[il].exp_local), hr_plan_xhot_free(&p->layers[il]);
    free(p->layers), free(p->neuron_bytes);
    memset(p, 0, sizeof *p);
}

bool hr_gpu_plan_uses_device(const hr_gpu_plan *p) { return p->total > p->bytes[HEARTH_GPU_CAT_SCRATCH]; }

bool hr_gpu_plan_takes_index(const hr_gpu_plan *p, const hearth_ctx_params *cp) {
    return p->hot_ok && !cp->disable_gpu_index && cp->n_gpu_layers == 0 && p->neuron_budget > 0;
}
