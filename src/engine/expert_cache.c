/* The dynamic expert cache (expert_cache.h): slots, staging and copies around the policy of
 * sparse/trace_cache.c, which the trace simulator shares. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "expert_cache.h"
#include "expert_stage.h"
#include "hybrid.h"
#include "moe.h"
#include "sparse/trace_cache.h"

/* Chosen on routing traces of the bench/moe.sh shapes (docs/hybrid.md): lfru's decode hit rate
 * was above or within 0.4 points of lru's but at one of six points (3.5 below), 2-20 points above
 * with copies slower than a token, for 1.1-7x fewer refills; synthetic routing says little about
 * real models. */
#define HR_ECACHE_DEFAULT_POLICY HR_CACHE_LFRU

typedef struct hr_ecache {
    hr_cache_policy policy;
    int32_t n_slot, n_layer, n_expert, k;
    hr_cache_layer *L;        /* [n_layer]; n_slot 0 where the layer holds no slots */
    uint64_t *ticket;         /* [n_layer][n_slot] the copy filling the slot (0: none) */
    int32_t n_stage;
    uint8_t **stage;          /* [n_stage] pinned, stage_bytes each */
    uint64_t *stage_ticket;   /* [n_stage] the copy reading it (0: free) */
    uint64_t stage_bytes;
    /* Staging off the decode thread (not on the stand-in, whose synchronous copies would
     * make its hits depend on the thread's timing): a buffer being filled has stage_slot[b]
     * >= 0 (il * n_slot + slot) and its copy is enqueued once the thread is done. */
    hr_stager *stager;
    int32_t *stage_slot;
    int32_t *slots, *evicted; /* [n_expert] work space */
} hr_ecache;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A slot's three matrices (and biases) lie back to back in the arena (layout_experts): one
 * copy fills it. */
static uint64_t slot_span(const hr_gpu_expert *x) { return x->end - x->gate.off; }

int hr_ecache_init(hr_hybrid *h, const hearth_model *m, const char *policy, hr_err *e) {
    const hr_gpu_plan *p = &h->plan;
    const int pol = policy ? hr_cache_policy_parse(policy) : (int)HR_ECACHE_DEFAULT_POLICY;
    if (pol < 0) return hr_errf(e, "unknown expert cache policy '%s' (lru, lfru or static)", policy);
    if (!p->cache_slots) return 0;
    hr_ecache *c = calloc(1, sizeof *c);
    if (!c) return hr_errf(e, "out of memory");
    h->cache = c;
    c->policy = (hr_cache_policy)pol, c->n_slot = p->cache_slots, c->n_layer = p->n_layer;
    c->n_expert = m->hp.n_expert, c->k = m->hp.n_expert_used;
    c->L = calloc((size_t)c->n_layer, sizeof *c->L);
    c->ticket = calloc((size_t)c->n_layer * (size_t)c->n_slot, sizeof *c->ticket);
    c->slots = malloc(sizeof *c->slots * (size_t)c->n_expert), c->evicted = malloc(sizeof *c->evicted * (size_t)c->n_expert);
    int32_t *init = malloc(sizeof *init * (size_t)c->n_slot);
    int rc = c->L && c->ticket && c->slots && c->evicted && init ? 0 : hr_errf(e, "out of memory");
    for (int32_t il = 0; !rc && il < c->n_layer; il++) {
        const hr_gpu_layer *g = &p->layers[il];
        if (!g->n_exp) continue;
        if (g->n_exp != c->n_slot) rc = hr_errf(e, "internal error: layer %d has %d expert slots, not %d", il, g->n_exp, c->n_slot);
        for (int32_t s = 0; !rc && s < c->n_slot; s++) {
            init[s] = g->exps[s].id;
            if (slot_span(&g->exps[s]) > c->stage_bytes) c->stage_bytes = slot_span(&g->exps[s]);
        }
        if (!rc) rc = hr_cache_layer_init(&c->L[il], c->n_slot, c->n_expert, init, e);
    }
    free(init);
    if (rc) return -1;
    c->n_stage = HR_ECACHE_STAGING_PER_K * c->k;
    c->stage = calloc((size_t)c->n_stage, sizeof *c->stage), c->stage_ticket = calloc((size_t)c->n_stage, sizeof *c->stage_ticket);
    c->stage_slot = malloc(sizeof *c->stage_slot * (size_t)c->n_stage);
    if (!c->stage || !c->stage_ticket || !c->stage_slot) return hr_errf(e, "out of memory");
    for (int32_t i = 0; i < c->n_stage; i++) c->stage_slot[i] = -1;
    if (!h->dev->ops->copies_inline && hr_stager_start(&c->stager, c->n_stage, e)) return -1;
    for (int32_t i = 0; i < c->n_stage; i++)
        if (!(c->stage[i] = h->dev->ops->host_alloc(h->dev, (size_t)c->stage_bytes)))
            return hr_errf(e, "out of pinned memory for %d expert staging buffers of %llu bytes", c->n_stage,
                           (unsigned long long)c->stage_bytes);
    h->st.cache_slots = c->n_slot;
    snprintf(h->st.cache_policy, sizeof h->st.cache_policy, "%s", hr_cache_policy_name(c->policy));
    return 0;
}

void hr_ecache_free(hr_hybrid *h) {
    hr_ecache *c = h->cache;
    if (!c) return;
    for (int32_t il = 0; c->L && il < c->n_layer; il++) hr_cache_layer_free(&c->L[il]);
    hr_stager_stop(c->stager); /* no thread writes a staging buffer from here on */
    /* copies still reading a staging buffer finish first (a lazy stream runs them now) */
    hr_err ignored;
    (void)h->dev->ops->copy_sync(h->dev, &ignored);
    for (int32_t i = 0; c->stage && i < c->n_stage; i++) h->dev->ops->host_free(h->dev, c->stage[i]);
    free(c->L), free(c->ticket), free(c->stage), free(c->stage_ticket), free(c->slots), free(c->evicted);
    free(c->stage_slot);
    free(c);
    h->cache = NULL;
}

/* Staged buffers whose bytes the thread has copied: their device copies enqueued now. */
static int pump(hr_hybrid *h, hr_ecache *k, hr_err *e) {
    for (int32_t b = 0; k->stager && b < k->n_stage; b++) {
        const int32_t at = k->stage_slot[b];
        if (at < 0 || !hr_stager_take(k->stager, b)) continue;
        const hr_gpu_expert *d = &h->plan.layers[at / k->n_slot].exps[at % k->n_slot];
        uint64_t t = 0;
        if (h->dev->ops->copy_async(h->dev, d->gate.off, k->stage[b], slot_span(d), &t, e)) return -1;
        k->stage_ticket[b] = t, k->ticket[at] = t, k->stage_slot[b] = -1;
    }
    return 0;
}

int hr_ecache_begin(hearth_ctx *c, int il, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_ecache *k = h->cache;
    if (!k || !k->L[il].n_slot) return 0;
    if (pump(h, k, e)) return -1;
    hr_cache_layer *L = &k->L[il];
    hr_gpu_layer *g = &h->plan.layers[il];
    for (int32_t s = 0; s < L->n_slot; s++) {
        const uint64_t t = k->ticket[(size_t)il * (size_t)k->n_slot + (size_t)s];
        if (L->slot[s] < 0 || L->ready[s] || !t) continue; /* no ticket: still being staged */
        bool done = false;
        if (h->dev->ops->copy_done(h->dev, t, &done, e)) return -1;
        if (!done) continue;
        hr_cache_filled(L, s);
        g->exps[s].id = L->slot[s], g->exp_local[L->slot[s]] = s;
        h->st.cache_landed++;
    }
    return 0;
}

/* A staging buffer whose copy has landed (or never ran), or -1. */
static int free_stage(hr_hybrid *h, hr_ecache *k, int32_t *n_free, hr_err *e) {
    int32_t first = -1;
    *n_free = 0;
    for (int32_t i = 0; i < k->n_stage; i++) {
        if (k->stage_slot[i] >= 0) continue; /* being staged */
        bool done = !k->stage_ticket[i];
        if (!done && h->dev->ops->copy_done(h->dev, k->stage_ticket[i], &done, e)) return -2;
        if (!done) continue;
        k->stage_ticket[i] = 0, ++*n_free;
        if (first < 0) first = i;
    }
    return first;
}

/* Slot s of layer il now holds expert x, not yet usable: stage its rows, enqueue the copy. */
static int refill(hearth_ctx *c, int il, int32_t s, int32_t old, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_ecache *k = h->cache;
    hr_gpu_layer *g = &h->plan.layers[il];
    const hr_moe_weights *w = &c->m->layers[il].moe;
    hr_gpu_expert *d = &g->exps[s];
    const int32_t x = k->L[il].slot[s];
    if (old >= 0) g->exp_local[old] = -1;
    d->id = -1;
    int32_t n_free = 0;
    const int32_t b = free_stage(h, k, &n_free, e);
    if (b < -1) return -1;
    if (b < 0) return hr_errf(e, "internal error: no free expert staging buffer");
    const hr_mat src[3] = {hr_moe_expert(&w->gate, x), hr_moe_expert(&w->up, x), hr_moe_expert(d->down_t ? &w->down_t : &w->down, x)};
    const hr_dmat *dst[3] = {&d->gate, &d->up, &d->down};
    hr_stage_piece p[HR_STAGE_PIECES];
    int np = 3;
    for (int i = 0; i < 3; i++)
        p[i] = (hr_stage_piece){k->stage[b] + (dst[i]->off - d->gate.off), src[i].data, (size_t)dst[i]->n_out * dst[i]->row_bytes};
    if (d->bias) { /* gpt-oss: the expert's biases after its matrices */
        const size_t ff = (size_t)c->m->hp.n_ff_exp, de = (size_t)c->m->hp.n_embd;
        p[np++] = (hr_stage_piece){k->stage[b] + (d->gb - d->gate.off), w->gate_b + (size_t)x * ff, ff * 4};
        p[np++] = (hr_stage_piece){k->stage[b] + (d->ub - d->gate.off), w->up_b + (size_t)x * ff, ff * 4};
        p[np++] = (hr_stage_piece){k->stage[b] + (d->db - d->gate.off), w->down_b + (size_t)x * de, de * 4};
    }
    const size_t at = (size_t)il * (size_t)k->n_slot + (size_t)s;
    h->st.cache_refills++, h->st.cache_refill_bytes += slot_span(d);
    k->ticket[at] = 0, k->stage_ticket[b] = 0;
    if (k->stager) { /* the thread copies; pump enqueues the device copy after */
        k->stage_slot[b] = (int32_t)at;
        hr_stager_put(k->stager, b, p, np);
        return 0;
    }
    for (int i = 0; i < np; i++) memcpy(p[i].dst, p[i].src, p[i].bytes);
    uint64_t t = 0;
    if (h->dev->ops->copy_async(h->dev, d->gate.off, k->stage[b], slot_span(d), &t, e)) return -1;
    k->stage_ticket[b] = t, k->ticket[at] = t;
    return 0;
}

int hr_ecache_end(hearth_ctx *c, int il, const int32_t *count, hr_err *e) {
    hr_hybrid *h = c->hy;
    hr_ecache *k = h->cache;
    if (!k || !k->L[il].n_slot) return 0;
    const double t0 = now_s();
    hr_cache_layer *L = &k->L[il];
    for (int32_t x = 0; x < k->n_expert; x++) {
        h->st.cache_lookups += (uint64_t)count[x];
        if (count[x] && L->where[x] >= 0 && !L->ready[L->where[x]]) h->st.cache_late += (uint64_t)count[x];
    }
    h->st.cache_hits += hr_cache_hits(L, count);
    if (pump(h, k, e)) return -1;
    int32_t n_free = 0;
    if (free_stage(h, k, &n_free, e) < -1) return -1;
    const int32_t max = n_free < k->k ? n_free : k->k;
    const int32_t n = hr_cache_update(L, k->policy, count, max, k->slots, k->evicted);
    for (int32_t i = 0; i < n; i++)
        if (refill(c, il, k->slots[i], k->evicted[i], e)) return -1;
    h->st.cache_refill_s += now_s() - t0;
    return 0;
}

double hr_ecache_thread_seconds(const hr_hybrid *h) { return h->cache && h->cache->stager ? hr_stager_seconds(h->cache->stager) : 0; }
