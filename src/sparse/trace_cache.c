/* Expert-cache policies and their trace simulator (trace_cache.h). */
#include <stdlib.h>
#include <string.h>
#include "trace_cache.h"

const char *hr_cache_policy_name(hr_cache_policy p) {
    static const char *const n[HR_CACHE_POLICY_COUNT] = {"static", "lru", "lfru"};
    return p >= 0 && p < HR_CACHE_POLICY_COUNT ? n[p] : "?";
}

int hr_cache_policy_parse(const char *s) {
    for (int p = 0; s && p < HR_CACHE_POLICY_COUNT; p++)
        if (!strcmp(s, hr_cache_policy_name((hr_cache_policy)p))) return p;
    return -1;
}

int hr_cache_layer_init(hr_cache_layer *L, int32_t n_slot, int32_t n_expert, const int32_t *init, hr_err *e) {
    memset(L, 0, sizeof *L);
    if (n_slot < 0 || n_expert < 1 || n_slot > n_expert)
        return hr_errf(e, "expert cache: %d slots for %d experts", n_slot, n_expert);
    L->n_slot = n_slot, L->n_expert = n_expert;
    const size_t s = (size_t)n_slot + 1, x = (size_t)n_expert;
    L->slot = malloc(s * sizeof *L->slot), L->ready = calloc(s, 1), L->where = malloc(x * sizeof *L->where);
    L->last = calloc(x, sizeof *L->last), L->score = calloc(x, sizeof *L->score), L->cand = malloc(x * sizeof *L->cand);
    if (!L->slot || !L->ready || !L->where || !L->last || !L->score || !L->cand) {
        hr_cache_layer_free(L);
        return hr_errf(e, "out of memory for the expert cache");
    }
    for (size_t i = 0; i < x; i++) L->where[i] = -1;
    for (int32_t i = 0; i < n_slot; i++) {
        const int32_t v = init ? init[i] : -1;
        if (v >= n_expert || (v >= 0 && L->where[v] >= 0)) {
            hr_cache_layer_free(L);
            return hr_errf(e, "expert cache: slot %d starts with expert %d (of %d, or twice)", i, v, n_expert);
        }
        L->slot[i] = v < 0 ? -1 : v, L->ready[i] = v >= 0;
        if (v >= 0) L->where[v] = i;
    }
    return 0;
}

void hr_cache_layer_free(hr_cache_layer *L) {
    free(L->slot), free(L->ready), free(L->where), free(L->last), free(L->score), free(L->cand);
    memset(L, 0, sizeof *L);
}

uint64_t hr_cache_hits(const hr_cache_layer *L, const int32_t *count) {
    uint64_t h = 0;
    for (int32_t x = 0; x < L->n_expert; x++)
        if (count[x] && hr_cache_hit(L, x)) h += (uint64_t)count[x];
    return h;
}

/* The victim for policy p: an empty slot first, else a ready slot whose expert this step
 * did not use, least recently used (lru) or of the lowest score (lfru); -1: none. */
static int32_t victim(const hr_cache_layer *L, hr_cache_policy p) {
    int32_t best = -1;
    for (int32_t s = 0; s < L->n_slot; s++) {
        const int32_t x = L->slot[s];
        if (x < 0) return s;
        if (!L->ready[s] || L->last[x] == L->step) continue;
        if (best < 0) { best = s; continue; }
        const int32_t b = L->slot[best];
        if (p == HR_CACHE_LRU ? L->last[x] < L->last[b] : L->score[x] < L->score[b]) best = s;
    }
    return best;
}

/* Candidate a before b: more routed this step (lru) or a higher score (lfru); then lower id. */
static bool cand_before(const hr_cache_layer *L, hr_cache_policy p, const int32_t *count, int32_t a, int32_t b) {
    if (p == HR_CACHE_LFRU && L->score[a] != L->score[b]) return L->score[a] > L->score[b];
    if (p != HR_CACHE_LFRU && count[a] != count[b]) return count[a] > count[b];
    return a < b;
}

int32_t hr_cache_update(hr_cache_layer *L, hr_cache_policy p, const int32_t *count, int32_t max, int32_t *slots,
                        int32_t *evicted) {
    L->step++;
    int32_t nc = 0;
    for (int32_t x = 0; x < L->n_expert; x++) {
        L->score[x] = L->score[x] * HR_CACHE_LFRU_DECAY + (float)count[x];
        if (!count[x]) continue;
        L->last[x] = L->step;
        if (L->where[x] < 0) { /* insertion into the candidates, best first */
            int32_t i = nc++;
            for (; i > 0 && cand_before(L, p, count, x, L->cand[i - 1]); i--) L->cand[i] = L->cand[i - 1];
            L->cand[i] = x;
        }
    }
    if (p == HR_CACHE_STATIC) return 0;
    int32_t n = 0;
    for (int32_t i = 0; i < nc && n < max; i++) {
        const int32_t x = L->cand[i], s = victim(L, p);
        if (s < 0) break;
        const int32_t old = L->slot[s];
        if (p == HR_CACHE_LFRU && old >= 0 && !(L->score[x] > L->score[old])) break; /* later candidates score less */
        if (old >= 0) L->where[old] = -1;
        L->slot[s] = x, L->ready[s] = 0, L->where[x] = s;
        if (evicted) evicted[n] = old;
        slots[n++] = s;
    }
    return n;
}

void hr_cache_top(const uint64_t *freq, int32_t n_expert, int32_t n, int32_t *out) {
    for (int32_t r = 0; r < n; r++) {
        int32_t best = -1;
        for (int32_t x = 0; x < n_expert; x++) {
            bool taken = false;
            for (int32_t q = 0; q < r && !taken; q++) taken = out[q] == x;
            if (!taken && (best < 0 || freq[x] > freq[best])) best = x;
        }
        out[r] = best;
    }
}

/* Per layer: the cache, when each filling slot becomes ready (in evaluations of the layer). */
typedef struct sim_layer {
    hr_cache_layer c;
    uint64_t *due; /* [n_slot] */
} sim_layer;

static int sim_init(const hr_rtrace *t, hr_cache_policy p, int32_t n_slot, const int32_t *init, sim_layer *S, hr_err *e) {
    uint64_t *freq = calloc((size_t)t->n_layer * (size_t)t->n_expert, sizeof *freq);
    int32_t *top = malloc(sizeof *top * ((size_t)n_slot + 1));
    int rc = freq && top ? 0 : hr_errf(e, "out of memory");
    for (int64_t r = 0; !rc && r < t->n_rec; r++)
        for (int64_t i = 0; i < (int64_t)t->n_tok[r] * t->k; i++)
            freq[(size_t)t->layer[r] * (size_t)t->n_expert + (size_t)t->ids[t->off[r] + i]]++;
    for (int32_t il = 0; !rc && il < t->n_layer; il++) {
        const int32_t *start = init ? init + (size_t)il * (size_t)n_slot : NULL;
        if (!init && p == HR_CACHE_STATIC) hr_cache_top(freq + (size_t)il * (size_t)t->n_expert, t->n_expert, n_slot, top), start = top;
        rc = hr_cache_layer_init(&S[il].c, n_slot, t->n_expert, start, e);
        if (!rc && !(S[il].due = calloc((size_t)n_slot + 1, sizeof *S[il].due))) rc = hr_errf(e, "out of memory");
    }
    free(freq), free(top);
    return rc;
}

int hr_cache_simulate(const hr_rtrace *t, hr_cache_policy p, int32_t n_slot, int32_t max_refills, int32_t lag,
                      const int32_t *init, hr_cache_sim *out, hr_err *e) {
    memset(out, 0, sizeof *out);
    if (p < 0 || p >= HR_CACHE_POLICY_COUNT || n_slot < 0 || n_slot > t->n_expert || max_refills < 0 || lag < 1)
        return hr_errf(e, "cache simulation: policy %d, %d slots of %d experts, %d refills, lag %d", (int)p, n_slot,
                       t->n_expert, max_refills, lag);
    sim_layer *S = calloc((size_t)t->n_layer, sizeof *S);
    int32_t *count = calloc((size_t)t->n_expert, sizeof *count), *slots = calloc((size_t)t->n_expert + 1, sizeof *slots);
    int rc = S && count && slots ? sim_init(t, p, n_slot, init, S, e) : hr_errf(e, "out of memory");
    for (int64_t r = 0; !rc && r < t->n_rec; r++) {
        sim_layer *l = &S[t->layer[r]];
        for (int32_t s = 0; s < n_slot; s++) /* copies due by this evaluation have landed */
            if (l->c.slot[s] >= 0 && !l->c.ready[s] && l->due[s] <= l->c.step) hr_cache_filled(&l->c, s);
        memset(count, 0, sizeof *count * (size_t)t->n_expert);
        const int64_t m = (int64_t)t->n_tok[r] * t->k;
        for (int64_t i = 0; i < m; i++) count[t->ids[t->off[r] + i]]++;
        const uint64_t h = hr_cache_hits(&l->c, count);
        out->lookups += (uint64_t)m, out->hits += h;
        if (t->n_tok[r] == 1) out->decode_lookups += (uint64_t)m, out->decode_hits += h;
        const int32_t n = hr_cache_update(&l->c, p, count, max_refills, slots, NULL);
        for (int32_t i = 0; i < n; i++) l->due[slots[i]] = l->c.step + (uint64_t)lag - 1;
        out->refills += (uint64_t)n;
    }
    for (int32_t il = 0; S && il < t->n_layer; il++) hr_cache_layer_free(&S[il].c), free(S[il].due);
    free(S), free(count), free(slots);
    return rc;
}
