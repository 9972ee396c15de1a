#include "ffn.h"
#include "ops.h"

/* Dense FFN: every neuron. */
static int ffn_dense(hearth_ctx *c, const hr_ffn_weights *f, const float *xn, int32_t n, float *out, hr_err *e) {
    const hr_hparams *hp = &c->m->hp;
    if ((f->gate.data && hr_matmul(&c->cpu, &f->gate, xn, n, c->g, e)) || hr_matmul(&c->cpu, &f->up, xn, n, c->u, e))
        return -1;
    hr_ffn_act(c->h, f->gate.data ? c->g : NULL, c->u, (int64_t)n * hp->n_ff, hp->act);
    return hr_matmul(&c->cpu, &f->down, c->h, n, out, e);
}

int hr_ffn(hearth_ctx *c, const hr_layer *L, int il, const float *x, const float *xn, int32_t n, float *out, hr_err *e) {
    (void)il, (void)x;
    return ffn_dense(c, &L->ffn, xn, n, out, e);
}
