/* One layer's FFN split in FFN mode threshold: the device holds the hot neurons' gate, up
 * and down_t rows, computes their gate fully, tests |act(gate)| > the layer's threshold
 * (thr_mask), then up (only rows some token passes) and the down_t axpy of those neurons;
 * meanwhile the CPU does the same for the cold neurons. Then out = cold + hot, in that order,
 * as the predicted-mode split (hybrid_ffn.c) sums. In predicted mode on such a file the
 * device still tests every hot neuron (its gate rows are resident and fast to read), and the
 * predictor only narrows the cold ones: the output is threshold mode's for the hot neurons
 * and predicted mode's for the cold.
 *
 * The decision is the host's own where the arithmetic allows: both sides compare the gate
 * product through one function (hr_gate_mag on the host and the stand-in; the CUDA kernels
 * use the same formulas), so on the stand-in, whose gather is the CPU's, every neuron's
 * decision equals CPU-only threshold mode's bit for bit. On CUDA the gate product sums in
 * another order (and expf/tanhf are the device's), so a neuron within rounding of the
 * threshold can go the other way: its contribution is then about thr x |up . x| x |down_t
 * row|, which the tests' CUDA tolerance covers (docs/threshold.md). */
#include <string.h>
#include <time.h>
#include "hybrid.h"
#include "backends/cpu/ops.h"
#include "ffn.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The device's share: every hot row's gate, the mask, up over the needed rows, down. */
static int enqueue_hot_thr(hearth_ctx *c, int il, const float *xn, bool xn_on_dev, int32_t n, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_dev *d = h->dev;
    const hr_dev_ops *o = d->ops;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const hr_gpu_scratch *s = &h->plan.sc;
    const int64_t nd = (int64_t)n * c->m->hp.n_embd, k = g->n_hot;
    const int act = hr_act_device(c->m->hp.act);
    if (!xn_on_dev) memcpy(h->h_in, xn, sizeof(float) * (size_t)nd);
    return (!xn_on_dev && hr_hy_to_dev(h, s->x, h->h_in, (uint64_t)nd * 4, e)) ||
                   hr_hy_to_dev(h, s->idx, h->h_iota, (uint64_t)k * 4, e) ||
                   o->gather_matmul(d, &g->gate, s->x, n, s->idx, k, s->g, e) ||
                   o->thr_mask(d, s->g, n * k, c->m->ffn_thr[il], act, s->mask, e) ||
                   o->gather_matmul_masked(d, &g->up, s->x, n, s->idx, k, s->mask, s->u, e) ||
                   o->ffn_act(d, s->g, s->u, n * k, act, s->h, e) || o->apply_mask(d, s->h, s->mask, n, k, e) ||
                   o->sparse_axpy(d, &g->down, s->h, n, s->idx, k, s->y, e) ||
                   hr_hy_to_host(h, h->h_y, s->y, (uint64_t)nd * 4, e) || hr_hy_to_host(h, h->h_mask, s->mask, (uint64_t)(n * k), e)
               ? -1
               : 0;
}

/* The cold neurons in threshold mode (in predicted mode: those the predictor marks in
 * c->ffn.mask for some token): their gate (gathered: the dense product's values), the test
 * into c->ffn.mask (ANDed with the predictor's marks), then up and the down_t axpy over those
 * some token passes; out (overwritten) = their partial sum. */
static bool marked(const hearth_ctx *c, int64_t j, int32_t n) {
    for (int32_t t = 0; t < n; t++)
        if (c->ffn.mask[t * c->m->hp.n_ff + j]) return true;
    return false;
}
static int cold_thr(hearth_ctx *c, const hr_layer *L, int il, const float *xn, int32_t n, bool predicted, float *out, hr_err *e) {
    const hr_ffn_weights *f = &L->ffn;
    const int64_t ff = c->m->hp.n_ff;
    const int32_t *local = c->hy->local[il];
    int32_t *idx = c->ffn.idx;
    int64_t nc = 0, ns = 0;
    for (int64_t j = 0; j < ff; j++)
        if (local[j] < 0 && (!predicted || marked(c, j, n))) idx[nc++] = (int32_t)j;
    memset(out, 0, sizeof(float) * (size_t)n * (size_t)c->m->hp.n_embd);
    if (!nc) return 0;
    if (hr_gather_matmul(&c->cpu, &f->gate, xn, n, idx, nc, c->sc.g, e)) return -1;
    hr_ffn_gate_mag(c->ffn.a, c->sc.g, n * nc, c->m->hp.act, c->m->gelu_tab);
    const float thr = c->m->ffn_thr[il];
    for (int32_t t = 0; t < n; t++) /* gate values and decisions in full rows, as CPU-only threshold mode keeps them */
        for (int64_t i = 0; i < nc; i++) {
            const int64_t q = t * ff + idx[i];
            c->ffn.s[q] = c->sc.g[t * nc + i];
            c->ffn.mask[q] = (!predicted || c->ffn.mask[q]) && c->ffn.a[t * nc + i] > thr;
        }
    for (int64_t j = 0; j < ff; j++) { /* the cold neurons some token passes */
        bool any = false;
        for (int32_t t = 0; t < n && !any && local[j] < 0; t++) any = c->ffn.mask[t * ff + j];
        if (any) idx[ns++] = (int32_t)j;
    }
    if (!ns) return 0;
    if (hr_gather_matmul(&c->cpu, &f->up, xn, n, idx, ns, c->sc.u, e)) return -1;
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < ns; i++) c->sc.g[t * ns + i] = c->ffn.s[t * ff + idx[i]];
    hr_ffn_act_tab(c->ffn.a, c->sc.g, c->sc.u, n * ns, c->m->hp.act, c->m->gelu_tab);
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < ns; i++)
            if (!c->ffn.mask[t * ff + idx[i]]) c->ffn.a[t * ns + i] = 0.0f;
    return hr_sparse_axpy_ws(&c->cpu, &c->sparse_ws, &f->down_t, c->ffn.a, n, idx, ns, out, e);
}

/* After the wait: the device's decisions into c->ffn.mask (the counters read it), its
 * computed activations counted. */
static void hot_mask_back(hearth_ctx *c, int il, int32_t n) {
    hr_hybrid *h = c->hy;
    const hr_gpu_layer *g = &h->plan.layers[il];
    const int64_t ff = c->m->hp.n_ff, k = g->n_hot;
    uint64_t on = 0;
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < k; i++) {
            const uint8_t v = h->h_mask[t * k + i] != 0;
            c->ffn.mask[t * ff + g->hot_ids[i]] = v, on += v;
        }
    h->st.act_device += on;
}

int hr_hybrid_ffn_split_thr(hearth_ctx *c, const hr_layer *L, int il, const float *xn, bool xn_on_dev, int32_t n, bool predicted,
                            float *out, hr_err *e) {
    hr_hybrid *h = c->hy;
    const double t0 = now_s();
    if (enqueue_hot_thr(c, il, xn, xn_on_dev, n, e)) return hr_hy_abandon(h);
    const double t1 = now_s();
    if (cold_thr(c, L, il, xn, n, predicted, out, e)) return hr_hy_abandon(h);
    const double t2 = now_s();
    if (hr_hy_sync(h, e)) return -1;
    const double t3 = now_s();
    h->st.ffn_splits++;
    h->st.enqueue_s += t1 - t0, h->st.cold_s += t2 - t1, h->st.wait_s += t3 - t2;
    hot_mask_back(c, il, n);
    const int64_t nd = (int64_t)n * c->m->hp.n_embd;
    for (int64_t i = 0; i < nd; i++) out[i] = out[i] + h->h_y[i];
    return 0;
}
