/* Routing traces and the expert-cache policies (src/sparse/routing_trace.h, trace_cache.h):
 * a trace written and read back, malformed traces refused; a hand-worked trace where lru
 * thrashes and lfru keeps its steady experts; on random traces the closed forms (the static
 * oracle serves each layer's n most routed experts' routings; with a slot per expert every
 * routing after an expert's first evaluation hits) and lru against a second implementation
 * written here from the rules in trace_cache.h. */
#include <stdlib.h>
#include <string.h>
#include "sparse/routing_trace.h"
#include "sparse/trace_cache.h"
#include "testutil.h"

static hr_cache_sim sim(const hr_rtrace *t, hr_cache_policy p, int32_t slots, int32_t max, int32_t lag) {
    hr_cache_sim r;
    hr_err e = {{0}};
    CHECKF(!hr_cache_simulate(t, p, slots, max, lag, NULL, &r, &e), "simulate: %s", e.msg);
    return r;
}

/* 0 1 2 0 1 3 0 1 through 2 slots, one expert per token (worked out in the comments of
 * trace_cache.h's rules): lru evicts the steady pair for each one-off and never hits; lfru
 * refuses 3 (score 1 < 1.40 of expert 0) and hits 0 and 1 at the end; static holds 0, 1. */
static void hand_worked(void) {
    hr_rtrace t;
    hr_err e = {{0}};
    const int32_t seq[] = {0, 1, 2, 0, 1, 3, 0, 1};
    CHECKF(!hr_rtrace_init(&t, 1, 4, 1, &e), "init: %s", e.msg);
    for (int i = 0; i < 8; i++) CHECKF(!hr_rtrace_add(&t, 0, 1, &seq[i], &e), "add: %s", e.msg);
    const hr_cache_sim lru = sim(&t, HR_CACHE_LRU, 2, 1, 1), lfru = sim(&t, HR_CACHE_LFRU, 2, 1, 1);
    const hr_cache_sim st = sim(&t, HR_CACHE_STATIC, 2, 1, 1);
    CHECKF(lru.lookups == 8 && lru.hits == 0 && lru.refills == 8, "lru: %llu hits, %llu refills", (unsigned long long)lru.hits,
           (unsigned long long)lru.refills);
    CHECKF(lfru.hits == 2 && lfru.refills == 5, "lfru: %llu hits, %llu refills", (unsigned long long)lfru.hits,
           (unsigned long long)lfru.refills);
    CHECKF(st.hits == 6 && st.refills == 0, "static: %llu hits", (unsigned long long)st.hits);
    /* copies taking two evaluations: lru's refill of 0 at step 1 is usable only at step 3 */
    const hr_cache_sim slow = sim(&t, HR_CACHE_LRU, 2, 1, 2);
    CHECKF(slow.hits == 0, "lru lag 2: %llu hits", (unsigned long long)slow.hits);
    hr_rtrace_free(&t);
}

/* lru from the rules, with its own bookkeeping: per slot the expert, the evaluation it
 * becomes usable at and the expert's last use. */
static uint64_t lru_reference(const hr_rtrace *t, int32_t S, int32_t max, int32_t lag) {
    uint64_t hits = 0;
    for (int32_t il = 0; il < t->n_layer; il++) {
        int32_t slot[64];
        uint64_t usable[64], last[256] = {0}, step = 0;
        for (int32_t s = 0; s < S; s++) slot[s] = -1, usable[s] = 0;
        for (int64_t r = 0; r < t->n_rec; r++) {
            if (t->layer[r] != il) continue;
            step++;
            int32_t cnt[256] = {0};
            for (int64_t i = 0; i < (int64_t)t->n_tok[r] * t->k; i++) cnt[t->ids[t->off[r] + i]]++;
            for (int32_t s = 0; s < S; s++)
                if (slot[s] >= 0 && usable[s] <= step) hits += (uint64_t)cnt[slot[s]];
            for (int32_t x = 0; x < t->n_expert; x++)
                if (cnt[x]) last[x] = step;
            for (int32_t done = 0; done < max;) {
                int32_t best = -1; /* the missed expert with most tokens, then lowest id */
                for (int32_t x = 0; x < t->n_expert; x++) {
                    bool held = false;
                    for (int32_t s = 0; s < S; s++) held |= slot[s] == x;
                    if (cnt[x] && !held && (best < 0 || cnt[x] > cnt[best])) best = x;
                }
                if (best < 0) break;
                int32_t v = -1;
                for (int32_t s = 0; s < S && v < 0; s++)
                    if (slot[s] < 0) v = s;
                if (v < 0)
                    for (int32_t s = 0; s < S; s++) {
                        if (usable[s] > step || last[slot[s]] == step) continue; /* filling, or used now */
                        if (v < 0 || last[slot[s]] < last[slot[v]]) v = s;
                    }
                if (v < 0) break;
                slot[v] = best, usable[v] = step + (uint64_t)lag, done++;
                cnt[best] = 0; /* a candidate once */
            }
        }
    }
    return hits;
}

static void random_traces(void) {
    uint64_t rng = 12345;
    for (int trial = 0; trial < 40; trial++) {
        const int32_t nl = 1 + trial % 3, ne = 6 + trial % 11, k = 1 + trial % 3, S = 1 + trial % ne;
        hr_rtrace t;
        hr_err e = {{0}};
        CHECKF(!hr_rtrace_init(&t, nl, ne, k, &e), "init: %s", e.msg);
        for (int r = 0; r < 60; r++) {
            const int32_t n = r % 7 == 0 ? 5 : 1, il = r % nl;
            int32_t sel[5 * 3];
            for (int32_t i = 0; i < n; i++)
                for (int32_t q = 0; q < k; q++) { /* distinct per token, skewed toward low ids */
                    int32_t x;
                    bool dup;
                    do {
                        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                        const uint32_t u = (uint32_t)(rng >> 33);
                        x = (int32_t)((u % (uint32_t)ne) * (u % 3 ? 1u : (u >> 8) % 2) % (uint32_t)ne);
                        dup = false;
                        for (int32_t p = 0; p < q; p++) dup |= sel[i * k + p] == x;
                    } while (dup);
                    sel[i * k + q] = x;
                }
            CHECKF(!hr_rtrace_add(&t, il, n, sel, &e), "add: %s", e.msg);
        }
        /* static oracle: each layer's S largest counts */
        uint64_t want = 0, cnt[64][32] = {{0}}, first[64][32], step[64] = {0}, lookups = 0, cold = 0;
        memset(first, 0, sizeof first);
        for (int64_t r = 0; r < t.n_rec; r++) {
            const int32_t il = t.layer[r];
            step[il]++;
            uint64_t here[32] = {0};
            for (int64_t i = 0; i < (int64_t)t.n_tok[r] * k; i++) here[t.ids[t.off[r] + i]]++, lookups++;
            for (int32_t x = 0; x < ne; x++)
                if (here[x] && !first[il][x]) first[il][x] = step[il], cold += here[x];
            for (int32_t x = 0; x < ne; x++) cnt[il][x] += here[x];
        }
        for (int32_t il = 0; il < nl; il++)
            for (int32_t s = 0; s < S; s++) {
                int32_t b = 0;
                for (int32_t x = 1; x < ne; x++) b = cnt[il][x] > cnt[il][b] ? x : b;
                want += cnt[il][b], cnt[il][b] = 0;
            }
        const hr_cache_sim st = sim(&t, HR_CACHE_STATIC, S, k, 1);
        CHECKF(st.hits == want && st.lookups == lookups, "trial %d static: %llu hits, want %llu", trial,
               (unsigned long long)st.hits, (unsigned long long)want);
        /* a slot per expert and unbounded refills: only each expert's first evaluation misses */
        for (int p = HR_CACHE_LRU; p <= HR_CACHE_LFRU; p++) {
            const hr_cache_sim all = sim(&t, (hr_cache_policy)p, ne, ne, 1);
            CHECKF(all.hits == lookups - cold, "trial %d %s, every expert: %llu hits, want %llu", trial,
                   hr_cache_policy_name((hr_cache_policy)p), (unsigned long long)all.hits, (unsigned long long)(lookups - cold));
        }
        for (int32_t lag = 1; lag <= 3; lag += 2) {
            const hr_cache_sim l = sim(&t, HR_CACHE_LRU, S, k, lag);
            const uint64_t ref = lru_reference(&t, S, k, lag);
            CHECKF(l.hits == ref, "trial %d lru (%d slots of %d, k %d, lag %d): %llu hits, reference %llu", trial, S, ne, k,
                   lag, (unsigned long long)l.hits, (unsigned long long)ref);
        }
        hr_rtrace_free(&t);
    }
}

static void file_round_trip(void) {
    char path[256];
    hr_test_tmp(path, sizeof path, "trace.txt");
    FILE *f = NULL;
    hr_err e = {{0}};
    const int32_t a[6] = {3, 1, 0, 2, 1, 3}, b[2] = {2, 0};
    CHECKF(!hr_rtrace_create(path, 2, 4, 2, &f, &e), "create: %s", e.msg);
    if (!f) return;
    CHECKF(!hr_rtrace_append(f, 0, 3, 2, a, &e) && !hr_rtrace_append(f, 1, 1, 2, b, &e), "append: %s", e.msg);
    fclose(f);
    hr_rtrace t;
    CHECKF(!hr_rtrace_read(path, &t, &e), "read: %s", e.msg);
    CHECKF(t.n_layer == 2 && t.n_expert == 4 && t.k == 2 && t.n_rec == 2 && t.n_tok[0] == 3 && t.layer[1] == 1 &&
               !memcmp(t.ids, a, sizeof a) && !memcmp(t.ids + 6, b, sizeof b),
           "trace read back: %lld records", (long long)t.n_rec);
    hr_rtrace_free(&t);
    static const char *const bad[][2] = {
        {"hearth-routing-trace 1\nn_layer 2 n_expert 4 n_expert_used 2\n0 1 3 4\n", "outside [0, 4)"},
        {"hearth-routing-trace 1\nn_layer 2 n_expert 4 n_expert_used 2\n2 1 3 1\n", "layer 2 of 2"},
        {"hearth-routing-trace 1\nn_layer 2 n_expert 4 n_expert_used 2\n0 2 3 1 0\n", "ends after 3 of 4"},
        {"hearth-routing-trace 1\nn_layer 2 n_expert 4 n_expert_used 5\n", "bad shape"},
        {"something else\n", "not a routing trace"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        f = fopen(path, "w");
        if (!f) break;
        fputs(bad[i][0], f), fclose(f);
        const int rc = hr_rtrace_read(path, &t, &e);
        CHECKF(rc && strstr(e.msg, bad[i][1]), "bad trace %zu: %s", i, rc ? e.msg : "(accepted)");
    }
    remove(path);
    CHECKF(hr_cache_policy_parse("lfru") == HR_CACHE_LFRU && hr_cache_policy_parse("LRU") < 0, "policy names");
}

int main(void) {
    hand_worked();
    random_traces();
    file_round_trip();
    return TEST_END();
}
