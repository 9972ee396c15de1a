/* Hybrid CPU/device execution (docs/hybrid.md): at context creation the device is
 * opened, the plan made (gpu_plan.h) and the placed tensors uploaded into its arena;
 * in the forward pass the hooks below run a layer's attention, predictor, FFN share or
 * the output on the device. With no device (c->hy NULL, or inactive) the CPU path runs
 * untouched. */
#ifndef HR_HYBRID_H
#define HR_HYBRID_H
#include "context.h"
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
    bool x_dev;                 /* the residual stream of this batch is in scratch xp (device-resident layers) */
    bool scores_ready;          /* hr_hybrid_attn_pred left this layer's predictor scores in c->ffn_s */
    bool xn_dev;                /* ... and the FFN input in scratch x, so the hot part need not send it */
} hr_hybrid;

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
static inline bool hr_hybrid_has_pred(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g && g->pred;
}
/* Hot neurons (split with the CPU) or the whole dense FFN on the device. */
static inline bool hr_hybrid_has_hot(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g && g->n_hot > 0;
}
static inline bool hr_hybrid_has_dense_ffn(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g && g->ffn_dense;
}
static inline bool hr_hybrid_has_output(const hearth_ctx *c) { return c->hy && c->hy->dev && c->hy->plan.output; }
/* Layer il runs device-resident (hr_hybrid_run_layer): whole on the device with its norms, and
 * nothing asks the host to watch its FFN (predictor, firing statistics, calibration). */
static inline bool hr_hybrid_resident(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g && g->norms && c->ffn_mode != HEARTH_FFN_PREDICTED && !c->ffn_stats_on && !c->ffn_observer;
}

/* out = Wo . attention(in) for the tokens of f, with the device's KV cache. */
int hr_hybrid_attention(hearth_ctx *c, const hr_layer *L, int il, const float *in, const hr_fwd *f, float *out, hr_err *e);
/* Predictor scores fc2 . relu(fc1 . x) into scores [n][n_ff]. */
int hr_hybrid_predict(hearth_ctx *c, int il, const float *x, int32_t n, float *scores, hr_err *e);
/* The FFN given c->ffn_mask: active hot neurons on the device while the CPU computes the
 * active cold ones; out = cold + hot. */
int hr_hybrid_ffn_split(hearth_ctx *c, const hr_layer *L, int il, const float *xn, int32_t n, float *out, hr_err *e);
/* The whole dense FFN of layer il on the device. */
int hr_hybrid_ffn_dense(hearth_ctx *c, int il, const float *xn, int32_t n, float *out, hr_err *e);
/* Layer il's attention and predictor in one round trip: both on the device with the
 * layer's norms, predicted mode (a whole layer that can run resident never gets here). */
static inline bool hr_hybrid_fused(const hearth_ctx *c, int il) {
    const hr_gpu_layer *g = hr_hybrid_layer(c, il);
    return g && g->norms && g->attn && g->pred && c->ffn_mode == HEARTH_FFN_PREDICTED;
}
/* x += attention(norm(x)) on the device, then the predictor's scores over the new x into
 * c->ffn_s and c->xn = ffn_norm(x), all in one wait; hr_ffn then takes the scores (and the
 * hot part finds its input on the device) instead of asking again. */
int hr_hybrid_attn_pred(hearth_ctx *c, int il, const hr_fwd *f, hr_err *e);
/* True once, after hr_hybrid_attn_pred: the scores in c->ffn_s are this layer's. */
static inline bool hr_hybrid_take_scores(hearth_ctx *c) {
    if (!c->hy || !c->hy->scores_ready) return false;
    c->hy->scores_ready = false;
    return true;
}
/* Forgets what hr_hybrid_attn_pred left on the device for this layer. */
static inline void hr_hybrid_layer_done(hearth_ctx *c) {
    if (c->hy) c->hy->scores_ready = c->hy->xn_dev = false;
}
/* The whole serial layer il on the device: x += attention(norm(x)); x += ffn(norm(x)),
 * with x kept in device scratch from the first resident layer of a run to the last; only
 * enqueued (hr_hybrid_fetch_x brings x back). */
int hr_hybrid_run_layer(hearth_ctx *c, int il, const hr_fwd *f, hr_err *e);
/* Copies the residual stream of n tokens back into c->x after resident layers (no-op
 * otherwise) and waits for the device. */
int hr_hybrid_fetch_x(hearth_ctx *c, int32_t n, hr_err *e);
/* logits [rows][n_vocab] = output . xn on the device. */
int hr_hybrid_logits(hearth_ctx *c, const float *xn, int32_t rows, float *logits, hr_err *e);

/* ---- hot-neuron index (hybrid_index.c) ---- */

/* The model path behind an index path "<model>.generated.gpuidx" (malloc'ed), or NULL. */
char *hr_hybrid_model_path(const char *idx_path);
/* The model's activation statistics, when the model path is known and they exist and fit. */
int hr_hybrid_stats(const hearth_model *m, const char *idx_path, hr_stats *st, char *note, size_t cap);
/* The hot-neuron index for plan->neuron_budget: read from idx_path when its capacity
 * equals that budget and its hot neurons fit in it (and not reset), else generated by
 * the placement solver from the statistics and written to idx_path (kept in memory when
 * it cannot be written), or, without statistics, the budget spread evenly over the
 * layers. note: what happened. */
int hr_hybrid_index(const hearth_model *m, const char *idx_path, bool reset, const hr_gpu_plan *plan, const hr_stats *st,
                    hr_gpuidx *out, char *note, size_t cap, hr_err *e);
#endif
