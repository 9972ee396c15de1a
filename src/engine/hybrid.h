/* Hybrid CPU/device execution (docs/hybrid.md): at context creation the device is
 * opened, the plan made (gpu_plan.h) and the placed tensors uploaded into its arena;
 * in the forward pass each layer runs the step its plan names (hr_hybrid_step), whose
 * device parts are the functions below: attention, predictor, FFN share, whole layers,
 * the output. With no device (c->hy NULL, or inactive) every layer is HR_STEP_HOST and the
 * CPU path runs untouched. */
#ifndef HR_HYBRID_H
#define HR_HYBRID_H
#include "context.h"
#include "expert_cache.h"
#include "gpu_plan.h"
#include "sparse/stats.h"

typedef struct hr_hybrid {
    hr_dev *dev;                /* NULL: nothing on a device (status says why) */
    hr_gpu_plan plan;
    hearth_gpu_status st;
    int32_t **local;            /* [n_layer]: neuron id -> local hot row, -1 when cold (NULL: no hot rows) */
    /* pinned host buffers */
    float *h_in;                /* [n_batch][n_embd] */
    float *h_y;                 /* [n_batch][n_embd] hot partial output */
    int32_t *h_idx;             /* [n_ff] active local hot rows */
    uint8_t *h_mask;            /* [n_batch][n_ff] mask over h_idx */
    int32_t *h_iota;            /* [n_ff] 0, 1, ...: every row of a whole layer's neurons */
    float *h_xe, *h_ye;         /* [n_batch * n_expert_used][n_embd]: device experts' inputs, outputs */
    uint8_t *h_emask;           /* [n_batch * n_expert_used][n_ff_exp]: split experts' predicted hot
                                   neurons, as scratch emask (plan.expert_masks) */
    bool x_dev;                 /* where this batch's residual stream lives: in scratch xp from the first
                                   device-resident layer of a run until hr_hybrid_fetch_x */
    struct hr_ecache *cache;    /* the dynamic expert cache (--moe-cache; expert_cache.h), or NULL */
} hr_hybrid;

/* What a device step brought back for the rest of its layer (hr_hybrid_attn_pred), handed
 * on explicitly rather than left as flags on the context. */
typedef struct hr_dev_out {
    const float *scores;        /* [n][n_ff] this layer's predictor scores in host memory, or NULL */
    bool xn_on_dev;             /* the FFN's normed input is in scratch x: the hot part need not send it */
} hr_dev_out;

/* A layer FFN's share of device work, from the plan (hr_hybrid_ffn_parts) plus what the
 * layer's earlier device step left (in); all false: the FFN runs on the host. */
typedef struct hr_ffn_dev {
    bool pred;                  /* the predictor on the device (hr_hybrid_predict) */
    bool split;                 /* hot neurons on the device: hr_hybrid_ffn_split, given the mask */
    bool whole;                 /* the whole dense FFN on the device (hr_hybrid_ffn_dense) */
    hr_dev_out in;
} hr_ffn_dev;

/* The forward pass's transfers and waits, counted in the status (what a round trip
 * costs on a real device is latency, so the count is what the design can change). */
static inline int hr_hy_to_dev(hr_hybrid *h, uint64_t dst, const void *src, uint64_t bytes, hr_err *e) {
    h->st.bytes_to_dev += bytes;
    return h->dev->ops->to_dev(h->dev, dst, src, bytes, e);
}
static inline int hr_hy_to_host(hr_hybrid *h, void *dst, uint64_t src, uint64_t bytes, hr_err *e) {
    h->st.bytes_to_host += bytes;
    return h->dev->ops->to_host(h->dev, dst, src, bytes, e);
}
static inline int hr_hy_sync(hr_hybrid *h, hr_err *e) {
    h->st.syncs++;
    return h->dev->ops->sync(h->dev, e);
}
/* A host step failed while the device may still be reading pinned buffers: waits for it (its
 * own error, if any, is dropped: the host's is the one reported) and returns -1. */
static inline int hr_hy_abandon(hr_hybrid *h) {
    hr_err ignored;
    hr_hy_sync(h, &ignored);
    return -1;
}

/* Opens the device the parameters ask for and fills c->hy (NULL when gpu is off, or auto
 * finds nothing). Errors only when a device was asked for explicitly (cuda, standin) and
 * cannot be used as asked. */
int hr_hybrid_init(hearth_ctx *c, const hearth_ctx_params *p, hr_err *e);
/* --vram-budget GiB in bytes (contexts and hearth_gpu_plan_budget convert alike). */
uint64_t hr_hybrid_budget_bytes(double gib);
/* The arena's share of a budget: the device's own overhead comes off first. */
uint64_t hr_hybrid_arena_bytes(uint64_t budget, uint64_t overhead);
void hr_hybrid_free(hr_hybrid *h);

static inline const hr_gpu_layer *hr_hybrid_layer(const hearth_ctx *c, int il) {
    return c->hy && c->hy->dev ? &c->hy->plan.layers[il] : NULL;
}
/* Attention, and so layer il's KV cache, on the device: the host cache leaves the layer out. */
static inline bool hr_hybrid_has_attn(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g && g->attn;
}
/* The FFN's device share of layer il as the plan placed it (nothing without a device). */
static inline hr_ffn_dev hr_hybrid_ffn_parts(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g ? (hr_ffn_dev){.pred = g->pred, .split = g->n_hot > 0, .whole = g->ffn_dense} : (hr_ffn_dev){0};
}
static inline bool hr_hybrid_has_output(const hearth_ctx *c) { return c->hy && c->hy->dev && c->hy->plan.output; }
/* The step layer il runs: the plan's kind, except that a resident layer runs as a split FFN
 * (attention and whole FFN on the device, one round trip each) while the host watches its
 * FFN (firing statistics, calibration), which the context may ask for after the plan. */
static inline hr_step_kind hr_hybrid_step(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    if (!g) return HR_STEP_HOST;
    if (g->step == HR_STEP_RESIDENT && (c->ffn.stats_on || c->ffn.observer)) return HR_STEP_SPLIT_FFN;
    /* the host counts firing neurons only of experts it computes: all of them then */
    if (g->step == HR_STEP_SPLIT_MOE && (c->ffn.stats_on || c->ffn.observer)) return g->attn ? HR_STEP_ATTN : HR_STEP_HOST;
    return g->step;
}

/* out = Wo . attention(in) for the tokens of f, with the device's KV cache. */
int hr_hybrid_attention(hearth_ctx *c, const hr_layer *L, int il, const float *in, const hr_fwd *f, float *out, hr_err *e);
/* Predictor scores fc2 . relu(fc1 . x) into scores [n][n_ff]. */
int hr_hybrid_predict(hearth_ctx *c, int il, const float *x, int32_t n, float *scores, hr_err *e);
/* The FFN given c->ffn.mask: active hot neurons on the device while the CPU computes the
 * active cold ones; out = cold + hot. xn_on_dev: scratch x already holds xn. */
int hr_hybrid_ffn_split(hearth_ctx *c, const hr_layer *L, int il, const float *xn, bool xn_on_dev, int32_t n, float *out,
                        hr_err *e);
/* FFN mode threshold's split (hybrid_ffn_thr.c): the hot neurons' gate, threshold test, up
 * and down on the device while the CPU does the cold ones; out = cold + hot; c->ffn.mask
 * then holds every neuron's decision. predicted: c->ffn.mask holds the predictor's marks,
 * and only the marked cold neurons are tested (the hot ones all are). */
int hr_hybrid_ffn_split_thr(hearth_ctx *c, const hr_layer *L, int il, const float *xn, bool xn_on_dev, int32_t n, bool predicted,
                            float *out, hr_err *e);
/* The whole dense FFN of layer il on the device. */
int hr_hybrid_ffn_dense(hearth_ctx *c, int il, const float *xn, int32_t n, float *out, hr_err *e);
/* HR_STEP_ATTN_PRED's device part: x += attention(norm(x)) on the device, then the
 * predictor's scores over the new x into c->ffn.s and c->sc.xn = ffn_norm(x), all in one wait;
 * *out says so (scores, FFN input on the device), for the FFN that follows. */
int hr_hybrid_attn_pred(hearth_ctx *c, int il, const hr_fwd *f, hr_dev_out *out, hr_err *e);
/* The whole serial layer il on the device: x += attention(norm(x)); x += ffn(norm(x)),
 * with x kept in device scratch from the first resident layer of a run to the last; only
 * enqueued (hr_hybrid_fetch_x brings x back). */
int hr_hybrid_run_layer(hearth_ctx *c, int il, const hr_fwd *f, hr_err *e);
/* Copies the residual stream of n tokens back into c->sc.x after resident layers (no-op
 * otherwise) and waits for the device. */
int hr_hybrid_fetch_x(hearth_ctx *c, int32_t n, hr_err *e);
/* HR_STEP_SPLIT_MOE's device part (moe.c calls them): enqueues layer il's device experts
 * over the rows of h_xe (expert i of the layer's exps: n[i] rows from row r0[i]; n[i] 0:
 * not used), then the hot neurons of its host experts with some (xhot[i]: xn[i] rows from
 * row xr0[i]), their outputs to h_ye; hr_hy_sync then finds them there. Predicted mode: where
 * xmask[i] (NULL: nowhere), xhot[i]'s hot activations are masked by its predictor's marks,
 * h_emask's [xn[i]][n_hot] from row xr0[i] (rows of n_ff_exp bytes), copied over with them. */
int hr_hybrid_experts(hearth_ctx *c, int il, const int32_t *r0, const int32_t *n, const int32_t *xr0, const int32_t *xn,
                      const uint8_t *xmask, int32_t rows, hr_err *e);
/* logits [rows][n_vocab] = output . xn on the device. */
int hr_hybrid_logits(hearth_ctx *c, const float *xn, int32_t rows, float *logits, hr_err *e);

/* ---- hot-neuron index (hybrid_index.c) ---- */

/* The model path behind an index path "<model>.generated.gpuidx" (malloc'ed), or NULL. */
char *hr_hybrid_model_path(const char *idx_path);
/* The model's activation statistics, when the model path is known and they exist and fit
 * (a mixture of experts: its statistics, with the routing counts). */
int hr_hybrid_stats(const hearth_model *m, const char *idx_path, hr_stats *st, char *note, size_t cap);
/* The hot-neuron index for plan->neuron_budget: read from idx_path when its capacity
 * equals that budget and its hot neurons fit in it (and not reset), else generated by
 * the placement solver from the statistics and written to idx_path (kept in memory when
 * it cannot be written), or, without statistics, the budget spread evenly over the
 * layers. note: what happened. */
int hr_hybrid_index(const hearth_model *m, const char *idx_path, bool reset, const hr_gpu_plan *plan, const hr_stats *st,
                    hr_gpuidx *out, char *note, size_t cap, hr_err *e);
/* Mixtures of experts, static placement (hybrid_moe_index.c): *plan, made from in without an
 * index, is replaced by the expert index at idx_path when that was made for this model and
 * for plan->expert_budget (its split.vram_capacity) and fits this context (not with reset);
 * otherwise, placed from statistics (from_stats), plan's placement is written there (kept in
 * memory when it cannot be). A malformed file is an error; note: what happened. */
int hr_hybrid_moe_index(const hr_gpu_plan_in *in, const char *idx_path, bool reset, bool from_stats, hr_gpu_plan *plan,
                        char *note, size_t cap, hr_err *e);
#endif
