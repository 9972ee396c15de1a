/* HR_STEP_SPLIT_MOE's device part: the chosen experts a layer holds on the device, computed
 * over their tokens' rows while the CPU computes the others (moe.c). The host gathers the
 * rows of every device expert into one pinned block (grouped by expert), one copy takes them
 * over, each expert's gate, up, activation and down products run on its slice (one expert's
 * gate/up/activation scratch serves them all: the stream runs in order), and one copy brings
 * every output row back. Weighting and the per-token sum stay on the host, in rank order,
 * so the result does not depend on which side computed an expert. Experts of the layer with
 * hot neurons on the device (xhot) follow in the same block: the device computes those
 * neurons over the expert's rows into its output rows, the CPU the expert's other neurons
 * (moe.c adds the two, cold then hot); in predicted mode masked by the marks of the expert's
 * predictor, which the host ran first. */
#include "hybrid.h"

/* Expert i of the layer's xhot over n rows from row r0: its hot neurons' gate, up,
 * activation, (masked: zeroed where its predictor did not mark the neuron, as the host's
 * predicted mode zeroes the gate) and the sparse axpy over their down_t rows (local rows
 * 0..n_hot-1). */
static int expert_neurons(hearth_ctx *c, const hr_gpu_xhot *x, int32_t r0, int32_t n, bool masked, int act, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    const hr_dev_ops *o = d->ops;
    const hr_gpu_scratch *s = &h->plan.sc;
    const uint64_t row = (uint64_t)c->m->hp.n_embd * 4, X = s->xe + (uint64_t)r0 * row, Y = s->ye + (uint64_t)r0 * row;
    const uint64_t mrow = (uint64_t)c->m->hp.n_ff_exp, M = s->emask + (uint64_t)r0 * mrow, mb = (uint64_t)n * (uint64_t)x->n_hot;
    if (o->matmul(d, &x->gate, X, n, s->ge, e) || o->matmul(d, &x->up, X, n, s->ue, e) ||
        o->ffn_act(d, s->ge, s->ue, (int64_t)n * x->n_hot, act, s->he, e))
        return -1;
    if (masked && (hr_hy_to_dev(h, M, h->h_emask + (size_t)r0 * mrow, mb, e) || o->apply_mask(d, s->he, M, n, x->n_hot, e)))
        return -1;
    return o->sparse_axpy(d, &x->down, s->he, n, s->eidx, x->n_hot, Y, e);
}

int hr_hybrid_experts(hearth_ctx *c, int il, const int32_t *r0, const int32_t *n, const int32_t *xr0, const int32_t *xn,
                      const uint8_t *xmask, int32_t rows, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    const hr_dev_ops *o = d->ops;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const uint64_t row = (uint64_t)c->m->hp.n_embd * 4;
    const int64_t ff = c->m->hp.n_ff_exp;
    const int act = hr_act_device(c->m->hp.act);
    const hr_arch *ar = c->m->hp.arch;
    const bool oai = ar->moe_act_limit > 0; /* gpt-oss: OpenAI's clamped SwiGLU, as expert_act */
    if (!rows) return 0;
    if (hr_hy_to_dev(h, s->xe, h->h_xe, (uint64_t)rows * row, e)) return -1;
    for (int32_t i = 0; i < g->n_exp; i++) {
        if (!n[i]) continue;
        const hr_gpu_expert *x = &g->exps[i];
        const uint64_t X = s->xe + (uint64_t)r0[i] * row, Y = s->ye + (uint64_t)r0[i] * row;
        if (o->matmul(d, &x->gate, X, n[i], s->ge, e) || o->matmul(d, &x->up, X, n[i], s->ue, e) ||
            (x->bias && (o->add_bias(d, x->gb, ff, n[i], s->ge, e) || o->add_bias(d, x->ub, ff, n[i], s->ue, e))) ||
            (oai ? o->swiglu_oai(d, s->ge, s->ue, (int64_t)n[i] * ff, ar->moe_act_alpha, ar->moe_act_limit, s->he, e)
                 : o->ffn_act(d, s->ge, s->ue, (int64_t)n[i] * ff, act, s->he, e)) ||
            (x->down_t ? o->sparse_axpy(d, &x->down, s->he, n[i], s->eidx, ff, Y, e) : o->matmul(d, &x->down, s->he, n[i], Y, e)) ||
            (x->bias && o->add_bias(d, x->db, c->m->hp.n_embd, n[i], Y, e)))
            return -1;
    }
    for (int32_t i = 0; i < g->n_xhot; i++)
        if (xn[i] && expert_neurons(c, &g->xhot[i], xr0[i], xn[i], xmask && xmask[i], act, e)) return -1;
    return hr_hy_to_host(h, h->h_ye, s->ye, (uint64_t)rows * row, e);
}
