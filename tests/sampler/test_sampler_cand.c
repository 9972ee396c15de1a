/* Partial orderings of candidates against a full qsort by (logit desc, id asc). */
#include <stdlib.h>
#include <string.h>
#include "sampler/cand.h"
#include "testutil.h"

static int ref_cmp(const void *pa, const void *pb) {
    const hr_cand *a = pa, *b = pb;
    if (a->logit != b->logit) return a->logit > b->logit ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* kind 0 random, 1 few distinct values (many ties), 2 ascending, 3 descending, 4 all equal */
static void fill(float *x, int n, int kind, hr_rng *r) {
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = hr_rng_normal(r) * 3.0f; break;
        case 1: x[i] = (float)(hr_rng_next(r) % 5); break;
        case 2: x[i] = (float)i; break;
        case 3: x[i] = (float)(n - i); break;
        default: x[i] = 1.5f; break;
        }
    }
}

static void check_case(int n, int k, int kind, hr_rng *r) {
    float *x = malloc((size_t)n * sizeof *x);
    hr_cand *ref = malloc((size_t)n * sizeof *ref), *got = malloc((size_t)n * sizeof *got);
    fill(x, n, kind, r);
    for (int i = 0; i < n; i++) ref[i] = (hr_cand){x[i], i};
    qsort(ref, (size_t)n, sizeof *ref, ref_cmp);

    hr_cand_top_k(x, n, k, got);
    int bad = 0;
    for (int i = 0; i < k; i++) bad += got[i].id != ref[i].id || got[i].logit != ref[i].logit;
    CHECKF(bad == 0, "top_k n=%d k=%d kind=%d: %d mismatches", n, k, kind, bad);

    for (int i = 0; i < n; i++) got[i] = (hr_cand){x[i], i};
    hr_cand_partial_sort(got, n, k);
    bad = 0;
    for (int i = 0; i < k; i++) bad += got[i].id != ref[i].id;
    CHECKF(bad == 0, "partial_sort n=%d m=%d kind=%d: %d mismatches", n, k, kind, bad);
    /* nothing lost: the rest is a permutation of the remaining ids */
    char *seen = calloc((size_t)n, 1);
    for (int i = 0; i < n; i++) seen[got[i].id]++;
    int dup = 0;
    for (int i = 0; i < n; i++) dup += seen[i] != 1;
    CHECKF(dup == 0, "partial_sort n=%d m=%d kind=%d lost ids", n, k, kind);
    free(seen);
    free(x);
    free(ref);
    free(got);
}

int main(void) {
    hr_rng r = {42};
    const int ns[] = {1, 2, 3, 7, 100, 1000, 32000};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        int n = ns[a];
        const int ks[] = {1, 2, 5, 40, 256, n / 2, n - 1, n};
        for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
            int k = ks[b];
            if (k < 1 || k > n) continue;
            for (int kind = 0; kind < 5; kind++) check_case(n, k, kind, &r);
        }
    }
    return TEST_END();
}
