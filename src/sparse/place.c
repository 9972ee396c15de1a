/* Greedy hot-neuron placement by activations served per byte (place.h). */
#include "place.h"
#include <stdlib.h>
#include <string.h>

/* Cross-multiplied ratios of two 64-bit quantities need 128 bits. */
__extension__ typedef unsigned __int128 u128;

typedef struct unit {
    uint64_t value; /* activations of the unit's neurons */
    uint64_t cost;  /* bytes */
    int32_t layer, index; /* index: position among the layer's units, hottest first */
} unit;

/* Higher value per byte first; ties by layer then position, so the result is deterministic
 * and each layer's units keep their hottest-first order. */
static int cmp_unit(const void *a, const void *b) {
    const unit *x = a, *y = b;
    u128 l = (u128)x->value * y->cost, r = (u128)y->value * x->cost;
    if (l != r) return l > r ? -1 : 1;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Neuron ids of one layer, hottest first, lower id first among equals (a stable order). */
static void sort_layer(const uint32_t *c, int32_t n, int32_t *ids, int32_t *tmp) {
    for (int32_t j = 0; j < n; j++) ids[j] = j;
    /* merge sort: qsort has no context argument in C11 and is not stable */
    for (int32_t w = 1; w < n; w *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * w) {
            int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int32_t i = lo, k = mid, o = lo;
            while (i < mid && k < hi) tmp[o++] = c[ids[k]] > c[ids[i]] ? ids[k++] : ids[i++];
            while (i < mid) tmp[o++] = ids[i++];
            while (k < hi) tmp[o++] = ids[k++];
        }
        memcpy(ids, tmp, (size_t)n * sizeof *ids);
    }
}

static int check_problem(const hr_place_problem *p, const hr_gpuidx *out, hr_err *e) {
    if (p->n_layer < 1 || p->n_ff < 1) return hr_errf(e, "placement: empty model (%d layers x %d neurons)", p->n_layer, p->n_ff);
    if (p->group < 1) return hr_errf(e, "placement: group size %d must be at least 1", p->group);
    if (!out->hot || out->n_layer != p->n_layer || out->n_ff != p->n_ff)
        return hr_errf(e, "placement: index shape does not match %d x %d", p->n_layer, p->n_ff);
    for (int32_t l = 0; l < p->n_layer; l++)
        if (p->neuron_bytes[l] == 0 || p->neuron_bytes[l] > ((uint64_t)1 << 40))
            return hr_errf(e, "placement: layer %d has an implausible neuron size of %llu bytes", l,
                           (unsigned long long)p->neuron_bytes[l]);
    return 0;
}

/* Units of every layer: n_ff/group runs of the layer's hottest-first order. */
static void make_units(const hr_place_problem *p, int32_t g, int32_t upl, int32_t *order, int32_t *tmp, unit *u) {
    const int32_t nf = p->n_ff;
    for (int32_t l = 0; l < p->n_layer; l++) {
        const uint32_t *c = p->counts + (size_t)l * nf;
        int32_t *ids = order + (size_t)l * nf;
        sort_layer(c, nf, ids, tmp);
        for (int32_t k = 0; k < upl; k++) {
            int32_t lo = k * g, hi = lo + g < nf ? lo + g : nf;
            uint64_t v = 0;
            for (int32_t j = lo; j < hi; j++) v += c[ids[j]];
            u[(size_t)l * upl + k] = (unit){v, (uint64_t)(hi - lo) * p->neuron_bytes[l], l, k};
        }
    }
}

/* A unit is taken only right after the previous unit of its layer, so a layer whose next
 * unit does not fit takes nothing more and its hot set stays a prefix of its hottest-first
 * order; cheaper units of other layers may still use what is left. */
static void take_greedy(const unit *u, size_t n, uint64_t budget, int32_t *taken) {
    uint64_t left = budget;
    for (size_t i = 0; i < n; i++) {
        const unit *x = &u[i];
        if (taken[x->layer] != x->index || x->cost > left) continue;
        left -= x->cost;
        taken[x->layer]++;
    }
}

int hr_place_solve(const hr_place_problem *p, hr_gpuidx *out, hr_place_layer *layers, hr_err *e) {
    if (check_problem(p, out, e)) return -1;
    const int32_t nl = p->n_layer, nf = p->n_ff, g = p->group < nf ? p->group : nf;
    const int32_t upl = (nf + g - 1) / g; /* units per layer */
    int32_t *order = malloc((size_t)nl * nf * sizeof *order), *tmp = malloc((size_t)nf * sizeof *tmp);
    unit *u = malloc((size_t)nl * upl * sizeof *u);
    int32_t *taken = calloc((size_t)nl, sizeof *taken);
    int rc = 0;
    if (!order || !tmp || !u || !taken) {
        rc = hr_errf(e, "placement: out of memory for %d x %d neurons", nl, nf);
        goto done;
    }
    make_units(p, g, upl, order, tmp, u);
    qsort(u, (size_t)nl * upl, sizeof *u, cmp_unit);
    take_greedy(u, (size_t)nl * upl, p->budget, taken);
    memset(out->hot, 0, (size_t)nl * nf);
    for (int32_t l = 0; l < nl; l++) {
        const uint32_t *c = p->counts + (size_t)l * nf;
        const int32_t *ids = order + (size_t)l * nf;
        int32_t n_hot = taken[l] * g < nf ? taken[l] * g : nf;
        hr_place_layer s = {n_hot, (uint64_t)n_hot * p->neuron_bytes[l], 0, 0};
        for (int32_t j = 0; j < nf; j++) {
            s.total_count += c[ids[j]];
            if (j < n_hot) {
                out->hot[(size_t)l * nf + ids[j]] = 1;
                s.hot_count += c[ids[j]];
            }
        }
        if (layers) layers[l] = s;
    }
done:
    free(order), free(tmp), free(u), free(taken);
    return rc;
}
