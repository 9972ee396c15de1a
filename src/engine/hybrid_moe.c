/* HR_STEP_SPLIT_MOE's device part: the chosen experts a layer holds on the device, computed
 * over their tokens' rows while the CPU computes the others (moe.c). The host gathers the
 * rows of every device expert into one pinned block (grouped by expert), one copy takes them
 * over, each expert's gate, up, activation and down products run on its slice (one expert's
 * gate/up/activation scratch serves them all: the stream runs in order), and one copy brings
 * every output row back. Weighting and the per-token sum stay on the host, in rank order,
 * so the result does not depend on which side computed an expert. */
#include "hybrid.h"

int hr_hybrid_experts(hearth_ctx *c, int il, const int32_t *r0, const int32_t *n, int32_t rows, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    const hr_dev_ops *o = d->ops;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const uint64_t row = (uint64_t)c->m->hp.n_embd * 4;
    const int64_t ff = c->m->hp.n_ff_exp;
    const int act = hr_act_device(c->m->hp.act);
    if (!rows) return 0;
    if (hr_hy_to_dev(h, s->xe, h->h_xe, (uint64_t)rows * row, e)) return -1;
    for (int32_t i = 0; i < g->n_exp; i++) {
        if (!n[i]) continue;
        const hr_gpu_expert *x = &g->exps[i];
        const uint64_t X = s->xe + (uint64_t)r0[i] * row, Y = s->ye + (uint64_t)r0[i] * row;
        if (o->matmul(d, &x->gate, X, n[i], s->ge, e) || o->matmul(d, &x->up, X, n[i], s->ue, e) ||
            o->ffn_act(d, s->ge, s->ue, (int64_t)n[i] * ff, act, s->he, e) ||
            (x->down_t ? o->sparse_axpy(d, &x->down, s->he, n[i], s->eidx, ff, Y, e) : o->matmul(d, &x->down, s->he, n[i], Y, e)))
            return -1;
    }
    return hr_hy_to_host(h, h->h_ye, s->ye, (uint64_t)rows * row, e);
}
