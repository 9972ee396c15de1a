/* The forward pass's device hooks: attention with the device KV cache, the predictor,
 * the whole FFN of a dense file, whole device-resident layers, and the output matrix.
 * Each enqueues its work, copies the result back and waits, except resident layers, whose
 * residual stream stays on the device until hr_hybrid_fetch_x; the FFN split
 * (hybrid_ffn.c) is where CPU and device overlap. */
#include <math.h>
#include <string.h>
#include "hybrid.h"

typedef const hr_dev_ops *ops_t;

/* Host rows into device scratch through the pinned staging buffer. */
static int send(hr_hybrid *h, uint64_t dst, const float *src, int64_t n_floats, hr_err *e) {
    memcpy(h->h_in, src, sizeof(float) * (size_t)n_floats);
    return hr_hy_to_dev(h, dst, h->h_in, (uint64_t)n_floats * 4, e);
}

/* Enqueues out (scratch o) = Wo . attention(scratch x) (+ bo) for the tokens of f, with
 * the layer's q/k/v biases, per-head q/k norms and RoPE factors/YaRN as the host has them. */
static int enqueue_attention(hearth_ctx *c, const hr_layer *L, int il, const hr_fwd *f, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    ops_t o = d->ops;
    const hr_hparams *hp = &c->m->hp;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const int32_t n = f->n;
    const int64_t qd = (int64_t)hp->n_head * hp->head_dim, kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    if (o->matmul(d, &g->wq, s->x, n, s->q, e) || o->matmul(d, &g->wk, s->x, n, s->k, e) ||
        o->matmul(d, &g->wv, s->x, n, s->v, e))
        return -1;
    /* the host's order (forward.c): biases, per-head norms, RoPE */
    if ((L->bq && o->add_bias(d, g->bq, qd, n, s->q, e)) || (L->bk && o->add_bias(d, g->bk, kvd, n, s->k, e)) ||
        (L->bv && o->add_bias(d, g->bv, kvd, n, s->v, e)))
        return -1;
    if ((L->q_norm && o->rmsnorm(d, s->q, g->q_norm, hp->head_dim, (int64_t)n * hp->n_head, hp->rms_eps, s->q, e)) ||
        (L->k_norm && o->rmsnorm(d, s->k, g->k_norm, hp->head_dim, (int64_t)n * hp->n_head_kv, hp->rms_eps, s->k, e)))
        return -1;
    const hr_dev_rope ext = {.freq_factors = h->plan.rope_ff_src ? h->plan.rope_ff : UINT64_MAX,
                             .ext_factor = hp->rope_yarn.ext_factor, .attn_factor = hp->rope_yarn.attn_factor,
                             .corr_dims = {hp->rope_yarn.corr_dims[0], hp->rope_yarn.corr_dims[1]}};
    const hr_dev_rope *x = L->rope_ext ? &ext : NULL;
    if (L->use_rope && (o->rope(d, s->q, n, hp->n_head, hp->head_dim, hp->n_rot, f->pos, L->rope_base, L->rope_freq_scale,
                                hp->rope_neox, x, e) ||
                        o->rope(d, s->k, n, hp->n_head_kv, hp->head_dim, hp->n_rot, f->pos, L->rope_base,
                                L->rope_freq_scale, hp->rope_neox, x, e)))
        return -1;
    hr_dev_attn a = {.layer = il, .n_tok = n, .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = hp->head_dim,
                     .n_ctx = c->n_ctx, .n_layer = h->plan.kv_layers, .k_cache = h->plan.k_cache,
                     .v_cache = h->plan.v_cache, .pos = f->pos, .seq = f->seq, .scale = hp->attn_scale};
    return o->attention(d, &a, s->q, s->k, s->v, s->att, e) || o->matmul(d, &g->wo, s->att, n, s->o, e) ||
                   (L->bo && o->add_bias(d, g->bo, hp->n_embd, n, s->o, e))
               ? -1
               : 0;
}

/* Enqueues scratch y = the whole FFN of layer il over scratch x, every neuron: the dense
 * matrices of a dense file, or a whole layer's neuron rows (local row i = neuron i), whose
 * down projection is then the axpy over all rows of down_t. */
static int enqueue_ffn_dense(hearth_ctx *c, int il, int32_t n, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    ops_t o = d->ops;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const int64_t ff = c->m->hp.n_ff;
    const bool gate = g->gate.n_out > 0;
    h->st.act_device += (uint64_t)(n * ff);
    if ((gate && o->matmul(d, &g->gate, s->x, n, s->g, e)) || o->matmul(d, &g->up, s->x, n, s->u, e) ||
        o->ffn_act(d, gate ? s->g : UINT64_MAX, s->u, n * ff, hr_act_device(c->m->hp.act), s->h, e))
        return -1;
    if (g->ffn_dense) return o->matmul(d, &g->down, s->h, n, s->y, e);
    return hr_hy_to_dev(h, s->idx, h->h_iota, (uint64_t)ff * 4, e) || o->sparse_axpy(d, &g->down, s->h, n, s->idx, ff, s->y, e)
               ? -1
               : 0;
}

int hr_hybrid_attention(hearth_ctx *c, const hr_layer *L, int il, const float *in, const hr_fwd *f, float *out, hr_err *e) {
    hr_hybrid *h = c->hy;
    const int64_t nd = (int64_t)f->n * c->m->hp.n_embd;
    if (send(h, h->plan.sc.x, in, nd, e) || enqueue_attention(c, L, il, f, e) ||
        hr_hy_to_host(h, h->h_y, h->plan.sc.o, (uint64_t)nd * 4, e) || hr_hy_sync(h, e))
        return -1;
    memcpy(out, h->h_y, sizeof(float) * (size_t)nd);
    return 0;
}

/* Enqueues the first half of a serial layer over the residual stream in scratch xp:
 * xp += attention(attn_norm(xp)), then scratch x = ffn_norm(xp), the FFN's input. */
static int enqueue_attention_half(hearth_ctx *c, int il, const hr_fwd *f, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    ops_t o = d->ops;
    const hr_hparams *hp = &c->m->hp;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const int32_t n = f->n;
    return o->rmsnorm(d, s->xp, g->attn_norm, hp->n_embd, n, hp->rms_eps, s->x, e) ||
                   enqueue_attention(c, &c->m->layers[il], il, f, e) || o->add(d, s->o, (int64_t)n * hp->n_embd, s->xp, e) ||
                   o->rmsnorm(d, s->xp, g->ffn_norm, hp->n_embd, n, hp->rms_eps, s->x, e)
               ? -1
               : 0;
}

/* Enqueues scratch s = fc2 . relu(fc1 . xp), the predictor's scores (fc2 . fc1 . xp for a
 * linear predictor: its masks are made on the host, ffn.c). */
static int enqueue_predictor(hearth_ctx *c, int il, int32_t n, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    ops_t o = d->ops;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const bool relu = !c->m->layers[il].ffn.pred_b;
    return o->matmul(d, &g->fc1, s->xp, n, s->ph, e) ||
                   (relu && o->ffn_act(d, UINT64_MAX, s->ph, n * g->fc1.n_out, HR_ACT_RELU, s->ph, e)) ||
                   o->matmul(d, &g->fc2, s->ph, n, s->s, e)
               ? -1
               : 0;
}

/* Bytes of n tokens' predictor scores: n_ff per token, pred_m n_ff for a linear predictor. */
static uint64_t score_bytes(const hearth_ctx *c, int il, int32_t n) {
    const int32_t m = c->m->layers[il].ffn.pred_m;
    return (uint64_t)n * (uint64_t)c->m->hp.n_ff * (uint64_t)(m > 1 ? m : 1) * 4;
}

int hr_hybrid_run_layer(hearth_ctx *c, int il, const hr_fwd *f, hr_err *e) {
    hr_hybrid *h = c->hy;
    const hr_gpu_scratch *s = &h->plan.sc;
    const int32_t n = f->n;
    const int64_t nd = (int64_t)n * c->m->hp.n_embd;
    if (!h->x_dev) {
        if (send(h, s->xp, c->sc.x, nd, e)) return -1;
        h->x_dev = true;
    }
    if (enqueue_attention_half(c, il, f, e) || enqueue_ffn_dense(c, il, n, e) || h->dev->ops->add(h->dev, s->y, nd, s->xp, e))
        return -1;
    hearth_ffn_stats *st = &c->ffn.stats[il]; /* as hr_ffn counts a dense evaluation */
    st->tokens += (uint64_t)n, st->computed += (uint64_t)n * (uint64_t)c->m->hp.n_ff;
    return 0;
}

int hr_hybrid_attn_pred(hearth_ctx *c, int il, const hr_fwd *f, hr_dev_out *out, hr_err *e) {
    hr_hybrid *h = c->hy;
    const hr_gpu_scratch *s = &h->plan.sc;
    const int32_t n = f->n;
    const int64_t nd = (int64_t)n * c->m->hp.n_embd;
    /* h_in is read by the first copy and written by a later one: the stream keeps the order */
    if (send(h, s->xp, c->sc.x, nd, e) || enqueue_attention_half(c, il, f, e) || enqueue_predictor(c, il, n, e) ||
        hr_hy_to_host(h, h->h_y, s->xp, (uint64_t)nd * 4, e) || hr_hy_to_host(h, h->h_in, s->x, (uint64_t)nd * 4, e) ||
        hr_hy_to_host(h, c->ffn.s, s->s, score_bytes(c, il, n), e) || hr_hy_sync(h, e))
        return -1;
    memcpy(c->sc.x, h->h_y, sizeof(float) * (size_t)nd);
    memcpy(c->sc.xn, h->h_in, sizeof(float) * (size_t)nd);
    *out = (hr_dev_out){.scores = c->ffn.s, .xn_on_dev = true};
    return 0;
}

int hr_hybrid_fetch_x(hearth_ctx *c, int32_t n, hr_err *e) {
    hr_hybrid *h = c->hy;
    if (!h || !h->x_dev) return 0;
    const int64_t nd = (int64_t)n * c->m->hp.n_embd;
    h->x_dev = false;
    if (hr_hy_to_host(h, h->h_y, h->plan.sc.xp, (uint64_t)nd * 4, e) || hr_hy_sync(h, e)) return -1;
    memcpy(c->sc.x, h->h_y, sizeof(float) * (size_t)nd);
    return 0;
}

int hr_hybrid_predict(hearth_ctx *c, int il, const float *x, int32_t n, float *scores, hr_err *e) {
    hr_hybrid *h = c->hy;
    const hr_gpu_scratch *s = &h->plan.sc;
    return send(h, s->xp, x, (int64_t)n * c->m->hp.n_embd, e) || enqueue_predictor(c, il, n, e) ||
                   hr_hy_to_host(h, scores, s->s, score_bytes(c, il, n), e) || hr_hy_sync(h, e)
               ? -1
               : 0;
}

int hr_hybrid_ffn_dense(hearth_ctx *c, int il, const float *xn, int32_t n, float *out, hr_err *e) {
    hr_hybrid *h = c->hy;
    const int64_t nd = (int64_t)n * c->m->hp.n_embd;
    if (send(h, h->plan.sc.x, xn, nd, e) || enqueue_ffn_dense(c, il, n, e) ||
        hr_hy_to_host(h, h->h_y, h->plan.sc.y, (uint64_t)nd * 4, e) || hr_hy_sync(h, e))
        return -1;
    memcpy(out, h->h_y, sizeof(float) * (size_t)nd);
    return 0;
}

int hr_hybrid_logits(hearth_ctx *c, const float *xn, int32_t rows, float *logits, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    ops_t o = d->ops;
    const hr_gpu_scratch *s = &h->plan.sc;
    return send(h, s->x, xn, (int64_t)rows * c->m->hp.n_embd, e) || o->matmul(d, &h->plan.out, s->x, rows, s->logits, e) ||
                   hr_hy_to_host(h, logits, s->logits, (uint64_t)rows * (uint64_t)c->m->hp.n_vocab * 4, e) || hr_hy_sync(h, e)
               ? -1
               : 0;
}
