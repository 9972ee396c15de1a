/* One layer's FFN split between the device and the CPU, given the active mask
 * c->ffn.mask [n][n_ff]: the active hot neurons are enqueued on the device (gathered
 * gate and up over local rows, activation, mask, sparse axpy over the hot down_t rows,
 * copy back into pinned memory); while it works the CPU computes the active cold
 * neurons with the sparse kernels. Then out = cold + hot, always in that order. */
#include <string.h>
#include <time.h>
#include "hybrid.h"
#include "backends/cpu/ops.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Union of the active neurons split into local hot rows (h->h_idx) and cold neuron ids
 * (c->ffn.idx); the hot part's mask over its rows into h->h_mask. Counts the device's
 * activations (all layers' are in the context's FFN counters). */
static void partition(hearth_ctx *c, int il, int32_t n, int64_t *nh, int64_t *nc) {
    hr_hybrid *h = c->hy;
    const int64_t ff = c->m->hp.n_ff;
    const int32_t *local = h->local[il];
    const uint8_t *mk = c->ffn.mask;
    int64_t a = 0, b = 0;
    uint64_t on_dev = 0;
    for (int64_t j = 0; j < ff; j++) {
        uint32_t cnt = 0;
        for (int32_t t = 0; t < n; t++) cnt += mk[t * ff + j] != 0;
        if (!cnt) continue;
        if (local[j] >= 0) h->h_idx[a++] = local[j], on_dev += cnt;
        else c->ffn.idx[b++] = (int32_t)j;
    }
    const int32_t *hot = h->plan.layers[il].hot_ids;
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < a; i++) h->h_mask[t * a + i] = mk[t * ff + hot[h->h_idx[i]]];
    h->st.act_device += on_dev;
    *nh = a, *nc = b;
}

static int enqueue_hot(hearth_ctx *c, int il, const float *xn, bool xn_on_dev, int32_t n, int64_t nh, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    const hr_dev_ops *o = d->ops;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const int64_t nd = (int64_t)n * c->m->hp.n_embd;
    const bool gate = g->gate.n_out > 0;
    if (!xn_on_dev) memcpy(h->h_in, xn, sizeof(float) * (size_t)nd); /* else scratch x holds it already */
    return (!xn_on_dev && hr_hy_to_dev(h, s->x, h->h_in, (uint64_t)nd * 4, e)) ||
                   hr_hy_to_dev(h, s->idx, h->h_idx, (uint64_t)nh * 4, e) ||
                   hr_hy_to_dev(h, s->mask, h->h_mask, (uint64_t)(n * nh), e) ||
                   (gate && o->gather_matmul(d, &g->gate, s->x, n, s->idx, nh, s->g, e)) ||
                   o->gather_matmul(d, &g->up, s->x, n, s->idx, nh, s->u, e) ||
                   o->ffn_act(d, gate ? s->g : UINT64_MAX, s->u, n * nh, hr_act_device(c->m->hp.act), s->h, e) ||
                   o->apply_mask(d, s->h, s->mask, n, nh, e) || o->sparse_axpy(d, &g->down, s->h, n, s->idx, nh, s->y, e) ||
                   hr_hy_to_host(h, h->h_y, s->y, (uint64_t)nd * 4, e)
               ? -1
               : 0;
}

/* The cold neurons c->ffn.idx[0..nc) on the CPU: out (overwritten) = down_t . act. */
static int cold_part(hearth_ctx *c, const hr_layer *L, const float *xn, int32_t n, int64_t nc, float *out, hr_err *e) {
    const hr_ffn_weights *f = &L->ffn;
    const int64_t ff = c->m->hp.n_ff;
    const int32_t *idx = c->ffn.idx;
    if (!nc) {
        memset(out, 0, sizeof(float) * (size_t)n * (size_t)c->m->hp.n_embd);
        return 0;
    }
    if ((f->gate.data && hr_gather_matmul(&c->cpu, &f->gate, xn, n, idx, nc, c->sc.g, e)) ||
        hr_gather_matmul(&c->cpu, &f->up, xn, n, idx, nc, c->sc.u, e))
        return -1;
    hr_ffn_act_tab(c->ffn.a, f->gate.data ? c->sc.g : NULL, c->sc.u, n * nc, c->m->hp.act, c->m->gelu_tab);
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < nc; i++)
            if (!c->ffn.mask[t * ff + idx[i]]) c->ffn.a[t * nc + i] = 0.0f;
    return hr_sparse_axpy_ws(&c->cpu, &c->sparse_ws, &f->down_t, c->ffn.a, n, idx, nc, out, e);
}

int hr_hybrid_ffn_split(hearth_ctx *c, const hr_layer *L, int il, const float *xn, bool xn_on_dev, int32_t n, float *out,
                        hr_err *e) {
    hr_hybrid *h = c->hy;
    int64_t nh, nc;
    partition(c, il, n, &nh, &nc);
    const double t0 = now_s();
    if (nh && enqueue_hot(c, il, xn, xn_on_dev, n, nh, e)) return -1;
    const double t1 = now_s();
    if (cold_part(c, L, xn, n, nc, out, e)) return hr_hy_abandon(h);
    const double t2 = now_s();
    if (nh && hr_hy_sync(h, e)) return -1;
    const double t3 = now_s();
    h->st.ffn_splits++;
    h->st.enqueue_s += t1 - t0, h->st.cold_s += t2 - t1, h->st.wait_s += t3 - t2;
    if (nh) {
        const int64_t nd = (int64_t)n * c->m->hp.n_embd;
        for (int64_t i = 0; i < nd; i++) out[i] = out[i] + h->h_y[i];
    }
    return 0;
}
