/* The last stage of a mixture's GPU plan (gpu_plan.h): after whole experts, the hottest
 * neurons of the ReLU-family experts left on the host, by firing count per byte. A neuron
 * that never fired on the calibration text is worth nothing and is never placed. */
#include <stdlib.h>
#include <string.h>
#include "gpu_plan.h"
#include "formats/types.h"

/* One candidate neuron: 16 bytes, since a large mixture has millions. */
typedef struct xcand {
    double value; /* firing count per byte */
    uint64_t at;  /* (il * n_expert + x) * n_ff_exp + j */
} xcand;

/* Most firings per byte first; ties: the lower layer, expert, neuron (a fixed order). */
static int xcand_cmp(const void *a, const void *b) {
    const xcand *u = a, *v = b;
    if (u->value != v->value) return u->value > v->value ? -1 : 1;
    return (u->at > v->at) - (u->at < v->at);
}

static uint64_t rows_b(const hr_mat *m, int64_t k) { return k ? hr_dev_round((uint64_t)k * m->row_bytes) : 0; }

hr_mat hr_xhot_down(const hr_moe_weights *w) {
    if (w->down_t.data) return w->down_t;
    const hr_mat *d = &w->down;
    if (!d->data) return (hr_mat){0};
    /* a column of an F32/F16 matrix is a row of the same type: n_embd elements per neuron; a
     * quantized (or BF16) matrix's blocks run along the row, so its columns are dequantized
     * into F16 rows, which the device's axpy reads */
    const uint32_t t = d->type == HR_F32 || d->type == HR_F16 ? d->type : HR_F16;
    return (hr_mat){.type = t, .n_in = d->n_out, .n_out = d->n_in, .row_bytes = hr_row_bytes(t, (uint64_t)d->n_out)};
}
/* One hot neuron's row bytes, and the exact growth of an expert's three allocations from k
 * hot neurons to k + 1 (the rounding of each is paid by the neuron that crosses a step). */
static uint64_t neuron_row_bytes(const hr_moe_weights *w) { return w->gate.row_bytes + w->up.row_bytes + hr_xhot_down(w).row_bytes; }
static uint64_t grow(const hr_moe_weights *w, int64_t k) {
    const hr_mat dn = hr_xhot_down(w);
    return rows_b(&w->gate, k + 1) - rows_b(&w->gate, k) + rows_b(&w->up, k + 1) - rows_b(&w->up, k) + rows_b(&dn, k + 1) -
           rows_b(&dn, k);
}

static bool expert_whole(const hr_gpu_layer *g, int32_t x) { return g->exp_local && g->exp_local[x] >= 0; }

/* Candidates: neurons with a count of the host experts of the layers ok[] names. */
static int candidates(const hr_gpu_plan_in *in, const hr_gpu_plan *p, const bool *ok, xcand **out, size_t *n, hr_err *e) {
    const hr_hparams *hp = &in->m->hp;
    const int32_t ne = hp->n_expert, ff = hp->n_ff_exp;
    size_t cnt = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t il = 0; il < hp->n_layer; il++) {
            if (!ok[il]) continue;
            const double nb = (double)neuron_row_bytes(&in->m->layers[il].moe);
            for (int32_t x = 0; x < ne; x++) {
                if (expert_whole(&p->layers[il], x)) continue;
                const uint32_t *f = in->expert_neuron_freq + ((size_t)il * (size_t)ne + (size_t)x) * (size_t)ff;
                const uint64_t at = ((uint64_t)il * (uint64_t)ne + (uint64_t)x) * (uint64_t)ff;
                for (int32_t j = 0; j < ff; j++)
                    if (f[j] && pass) (*out)[cnt++] = (xcand){(double)f[j] / nb, at + (uint64_t)j};
                    else if (f[j]) cnt++;
            }
        }
        if (!pass) {
            *n = cnt, cnt = 0;
            if (!(*out = malloc(sizeof **out * (*n ? *n : 1)))) return hr_errf(e, "out of memory");
        }
    }
    return 0;
}

/* Layer il's chosen neurons (on [n_expert][ff], counts k [n_expert]) into its xhot list. */
static int record_layer(hr_gpu_layer *g, int32_t ne, int32_t ff, const uint8_t *on, const int32_t *k, hr_err *e) {
    int32_t n = 0;
    for (int32_t x = 0; x < ne; x++) n += k[x] > 0;
    if (!n) return 0;
    if (!(g->xhot = calloc((size_t)n, sizeof *g->xhot)) || !(g->xhot_local = malloc(sizeof(int32_t) * (size_t)ne)))
        return hr_errf(e, "out of memory");
    for (int32_t x = 0, i = 0; x < ne; x++) {
        g->xhot_local[x] = k[x] ? i : -1;
        if (!k[x]) continue;
        hr_gpu_xhot *h = &g->xhot[i++];
        h->id = x, h->n_hot = 0;
        h->n_cold = 0;
        if (!(h->hot_ids = malloc(sizeof(int32_t) * (size_t)k[x])) || !(h->cold_ids = malloc(sizeof(int32_t) * (size_t)(ff - k[x] + 1))))
            return hr_errf(e, "out of memory");
        for (int32_t j = 0; j < ff; j++)
            if (on[(size_t)x * (size_t)ff + (size_t)j]) h->hot_ids[h->n_hot++] = j;
            else h->cold_ids[h->n_cold++] = j;
        g->n_xhot++;
    }
    return 0;
}

int hr_plan_xhot_place(const hr_gpu_plan_in *in, hr_gpu_plan *p, const bool *ok, uint64_t *used, hr_err *e) {
    const hr_hparams *hp = &in->m->hp;
    const int32_t ne = hp->n_expert, ff = hp->n_ff_exp, nl = hp->n_layer;
    xcand *c = NULL;
    size_t n = 0;
    if (candidates(in, p, ok, &c, &n, e)) return -1;
    const size_t per = (size_t)ne * (size_t)ff;
    uint8_t *on = calloc((size_t)nl * per, 1);
    int32_t *k = calloc((size_t)nl * (size_t)ne, sizeof *k);
    int rc = on && k ? 0 : hr_errf(e, "out of memory");
    qsort(c, n, sizeof *c, xcand_cmp);
    for (size_t i = 0; !rc && i < n; i++) {
        const size_t ex = (size_t)(c[i].at / (uint64_t)ff), il = ex / (size_t)ne;
        const uint64_t b = grow(&in->m->layers[il].moe, k[ex]);
        if (b > in->budget - *used) break; /* the first that does not fit ends the stage */
        *used += b, k[ex]++, on[c[i].at] = 1;
    }
    for (int32_t il = 0; !rc && il < nl; il++) rc = record_layer(&p->layers[il], ne, ff, on + (size_t)il * per, k + (size_t)il * ne, e);
    free(c), free(on), free(k);
    return rc;
}

/* Bytes of k hot neurons of one expert: its three gathered allocations, each rounded. */
static uint64_t expert_rows_b(const hr_moe_weights *w, int64_t k) {
    const hr_mat dn = hr_xhot_down(w);
    return rows_b(&w->gate, k) + rows_b(&w->up, k) + rows_b(&dn, k);
}

int hr_plan_xhot_given(const hr_gpu_plan_in *in, hr_gpu_plan *p, const bool *ok, const uint8_t *on, uint64_t *used, hr_err *e) {
    const hr_hparams *hp = &in->m->hp;
    const int32_t ne = hp->n_expert, ff = hp->n_ff_exp, nl = hp->n_layer;
    const size_t per = (size_t)ne * (size_t)ff;
    int32_t *k = calloc((size_t)ne, sizeof *k);
    if (!k) return hr_errf(e, "out of memory");
    int rc = 0;
    for (int32_t il = 0; !rc && il < nl; il++) {
        const uint8_t *lon = on + (size_t)il * per;
        uint64_t b = 0;
        for (int32_t x = 0; !rc && x < ne; x++) {
            k[x] = 0;
            for (int32_t j = 0; j < ff; j++) k[x] += lon[(size_t)x * (size_t)ff + (size_t)j];
            if (k[x] && (!ok[il] || expert_whole(&p->layers[il], x)))
                rc = hr_errf(e, "it has hot neurons of layer %d's expert %d, which this context %s", il, x,
                             ok[il] ? "places whole" : "does not split (FFN mode, --n-cpu-moe, -ngl)");
            b += expert_rows_b(&in->m->layers[il].moe, k[x]);
        }
        if (!rc && b > in->budget - *used)
            rc = hr_errf(e, "its hot neurons of layer %d need %llu bytes, the budget leaves %llu", il,
                         (unsigned long long)b, (unsigned long long)(in->budget - *used));
        if (!rc) *used += b, rc = record_layer(&p->layers[il], ne, ff, lon, k, e);
    }
    free(k);
    return rc;
}

static hr_dmat rows_at(const hr_mat *m, int64_t rows, uint64_t *off, uint64_t *cat) {
    hr_dmat d = {m->type, m->n_in, rows, m->row_bytes, *off};
    const uint64_t b = rows_b(m, rows);
    *off += b, *cat += b;
    return d;
}

void hr_plan_xhot_layout(const hr_gpu_plan_in *in, hr_gpu_plan *p, int il, uint64_t *off) {
    hr_gpu_layer *g = &p->layers[il];
    const hr_moe_weights *w = &in->m->layers[il].moe;
    uint64_t *N = &p->bytes[HEARTH_GPU_CAT_NEURONS], before = *N;
    for (int32_t i = 0; i < g->n_xhot; i++) {
        hr_gpu_xhot *h = &g->xhot[i];
        h->gate = rows_at(&w->gate, h->n_hot, off, N), h->up = rows_at(&w->up, h->n_hot, off, N);
        const hr_mat dn = hr_xhot_down(w);
        h->down = rows_at(&dn, h->n_hot, off, N);
        p->n_xneurons_total += h->n_hot;
    }
    p->n_xhot_total += g->n_xhot, p->xhot_bytes += *N - before;
}

void hr_plan_xhot_free(hr_gpu_layer *g) {
    for (int32_t i = 0; g->xhot && i < g->n_xhot; i++) free(g->xhot[i].hot_ids), free(g->xhot[i].cold_ids);
    free(g->xhot), free(g->xhot_local);
    g->xhot = NULL, g->xhot_local = NULL, g->n_xhot = 0;
}
