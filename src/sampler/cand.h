/* Candidate tokens of the sampler chain and the partial orderings it needs.
 * Order: higher logit first, equal logits by lower id, so every selection is
 * deterministic and top-k=1 equals greedy argmax. */
#ifndef HR_SAMPLER_CAND_H
#define HR_SAMPLER_CAND_H
#include <stdint.h>

typedef struct hr_cand {
    float logit;
    int32_t id;
} hr_cand;

static inline int hr_cand_before(hr_cand a, hr_cand b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

/* The k best of the n logits, sorted, into out[0..k-1] (k <= n). O(n log k) worst case,
 * close to O(n) on real logits since most values fail the first comparison. */
void hr_cand_top_k(const float *logits, int32_t n, int32_t k, hr_cand *out);

/* Rearranges c[0..n-1] so that c[0..m-1] are its m best, sorted (m <= n). */
void hr_cand_partial_sort(hr_cand *c, int32_t n, int32_t m);

#endif
