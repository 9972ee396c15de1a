/* llama.cpp's default chain: penalties -> top-k -> top-p -> min-p -> temperature -> draw.
 * The candidate set is kept as a prefix of the sorted order whenever a step needs order,
 * and left unsorted (in id order) when none does, so the common cases avoid a full sort. */
#include "sampler.h"
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cand.h"

struct hr_sampler {
    hr_sampler_params p;
    int32_t n_vocab;
    float *work;       /* penalised logits */
    hr_cand *cand;     /* candidate set of one call */
    uint32_t *mark;    /* mark[id] == epoch: already penalised in this call */
    uint32_t epoch;
    int32_t *hist;     /* ring of the last repeat_last_n accepted tokens */
    int32_t hist_len, hist_pos;
    uint64_t rng[4];   /* xoshiro256** */
};

hr_sampler_params hr_sampler_defaults(void) {
    return (hr_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                               .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 0};
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0); }

int hr_sampler_params_check(const hr_sampler_params *p, hr_err *e) {
    if (!p) return hr_errf(e, "sampler: no parameters");
    if (!(p->temp >= 0.0f && p->temp <= HR_SAMPLER_TEMP_MAX))
        return hr_errf(e, "temp: %g is out of range [0, %g] (0 = greedy)", (double)p->temp, HR_SAMPLER_TEMP_MAX);
    if (p->top_k < 0 || p->top_k > HR_SAMPLER_TOP_K_MAX)
        return hr_errf(e, "top_k: %d is out of range [0, %d] (0 = off)", p->top_k, HR_SAMPLER_TOP_K_MAX);
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return hr_errf(e, "top_p: %g is out of range [0, 1] (1 = off)", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return hr_errf(e, "min_p: %g is out of range [0, 1] (0 = off)", (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f && p->repeat_penalty <= HR_SAMPLER_PENALTY_MAX))
        return hr_errf(e, "repeat_penalty: %g is out of range (0, %g]: it must be > 0 (1 = off)",
                       (double)p->repeat_penalty, HR_SAMPLER_PENALTY_MAX);
    if (p->repeat_last_n < 0 || p->repeat_last_n > HR_SAMPLER_LAST_N_MAX)
        return hr_errf(e, "repeat_last_n: %d is out of range [0, %d] (resolve -1 to the context size first)",
                       p->repeat_last_n, HR_SAMPLER_LAST_N_MAX);
    return 0;
}

hr_sampler *hr_sampler_new(const hr_sampler_params *p, int32_t n_vocab, hr_err *e) {
    if (!p) {
        hr_errf(e, "sampler: no parameters");
        return NULL;
    }
    if (n_vocab <= 0) {
        hr_errf(e, "sampler: n_vocab %d must be positive", n_vocab);
        return NULL;
    }
    if (hr_sampler_params_check(p, e) < 0) {
        hr_errctx(e, "sampler");
        return NULL;
    }
    hr_sampler *s = calloc(1, sizeof *s);
    if (!s) {
        hr_errf(e, "sampler: out of memory");
        return NULL;
    }
    s->p = *p;
    s->n_vocab = n_vocab;
    s->work = malloc((size_t)n_vocab * sizeof *s->work);
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->mark = calloc((size_t)n_vocab, sizeof *s->mark);
    s->hist = malloc((size_t)(p->repeat_last_n > 0 ? p->repeat_last_n : 1) * sizeof *s->hist);
    if (!s->work || !s->cand || !s->mark || !s->hist) {
        hr_sampler_free(s);
        hr_errf(e, "sampler: out of memory for a vocabulary of %d", n_vocab);
        return NULL;
    }
    uint64_t seed = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix(&seed);
    return s;
}

void hr_sampler_free(hr_sampler *s) {
    if (!s) return;
    free(s->work);
    free(s->cand);
    free(s->mark);
    free(s->hist);
    free(s);
}

void hr_sampler_accept(hr_sampler *s, int32_t token) {
    if (!s || s->p.repeat_last_n <= 0 || token < 0 || token >= s->n_vocab) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->p.repeat_last_n;
    if (s->hist_len < s->p.repeat_last_n) s->hist_len++;
}

/* NaN logits become -inf so that they are never chosen and never break the ordering; +inf
 * becomes FLT_MAX so that softmax differences stay finite.
 * A token is penalised once however often it occurs in the window, as in llama.cpp. */
static void penalise(hr_sampler *s, const float *logits) {
    int32_t n = s->n_vocab;
    for (int32_t i = 0; i < n; i++) {
        float x = logits[i];
        s->work[i] = isnan(x) ? -INFINITY : x == INFINITY ? FLT_MAX : x;
    }
    float pen = s->p.repeat_penalty;
    if (pen == 1.0f || s->hist_len == 0) return;
    if (++s->epoch == 0) {
        memset(s->mark, 0, (size_t)n * sizeof *s->mark);
        s->epoch = 1;
    }
    for (int32_t i = 0; i < s->hist_len; i++) {
        int32_t t = s->hist[i];
        if (s->mark[t] == s->epoch) continue;
        s->mark[t] = s->epoch;
        s->work[t] = s->work[t] <= 0.0f ? s->work[t] * pen : s->work[t] / pen;
    }
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Softmax normaliser of c[0..n-1] at temperature 1, relative to logit mx. */
static double exp_sum(const hr_cand *c, int32_t n, float mx) {
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += expf(c[i].logit - mx);
    return sum;
}

/* Keeps the shortest sorted prefix whose probability reaches top_p. Sorts only as far as
 * needed: first the best 256, widening 8x while the mass is not reached. */
static int32_t top_p(hr_cand *c, int32_t n, bool *sorted, double p) {
    bool was_sorted = *sorted;
    float mx = c[0].logit;
    if (!was_sorted)
        for (int32_t i = 1; i < n; i++)
            if (c[i].logit > mx) mx = c[i].logit;
    if (mx == -INFINITY) return 1;
    *sorted = true; /* what is returned is always a sorted prefix */
    double target = p * exp_sum(c, n, mx), cum = 0.0;
    int32_t done = 0;
    for (int32_t m = 256;; m = m > n / 8 ? n : m * 8) {
        if (m > n) m = n;
        /* c[0..done) is already the sorted best; only the rest needs ordering */
        if (!was_sorted) hr_cand_partial_sort(c + done, n - done, m - done);
        for (int32_t i = done; i < m; i++) {
            cum += expf(c[i].logit - mx);
            if (cum >= target) return i + 1;
        }
        done = m;
        if (m == n) return n;
    }
}

/* Keeps tokens whose probability is at least p times the best one's (logit >= max + ln p). */
static int32_t min_p(hr_cand *c, int32_t n, bool sorted, float p) {
    int32_t best = 0;
    if (!sorted)
        for (int32_t i = 1; i < n; i++)
            if (hr_cand_before(c[i], c[best])) best = i;
    float lim = c[best].logit + logf(p);
    if (!(c[best].logit >= lim)) { /* p > 1 keeps nothing; the best stays, as min_keep does */
        c[0] = c[best];
        return 1;
    }
    int32_t k = 0;
    if (sorted) {
        while (k < n && c[k].logit >= lim) k++;
    } else {
        for (int32_t i = 0; i < n; i++)
            if (c[i].logit >= lim) c[k++] = c[i];
    }
    return k;
}

/* Weights go to s->work, free by now (candidates carry their own logits). */
static int32_t draw(hr_sampler *s, const hr_cand *c, int32_t n, float temp) {
    float mx = c[0].logit;
    for (int32_t i = 1; i < n; i++)
        if (c[i].logit > mx) mx = c[i].logit;
    if (mx == -INFINITY) return c[0].id;
    float inv = 1.0f / temp, *w = s->work;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        w[i] = expf((c[i].logit - mx) * inv);
        sum += w[i];
    }
    double u = rng_uniform(s->rng) * sum, cum = 0.0;
    int32_t last = c[0].id;
    for (int32_t i = 0; i < n; i++) {
        if (w[i] <= 0.0f) continue;
        cum += w[i];
        last = c[i].id;
        if (u < cum) return c[i].id;
    }
    return last; /* u landed past the rounded total */
}

int32_t hr_sampler_sample(hr_sampler *s, const float *logits) {
    if (!s || !logits) return -1;
    int32_t n = s->n_vocab;
    penalise(s, logits);
    if (s->p.temp <= 0.0f) return argmax(s->work, n);

    bool sorted = false;
    int32_t k = s->p.top_k;
    if (k > 0 && k < n) {
        hr_cand_top_k(s->work, n, k, s->cand);
        n = k;
        sorted = true;
    } else {
        for (int32_t i = 0; i < n; i++) s->cand[i] = (hr_cand){s->work[i], i};
    }
    if (s->p.top_p < 1.0f) n = top_p(s->cand, n, &sorted, s->p.top_p);
    if (s->p.min_p > 0.0f) n = min_p(s->cand, n, sorted, s->p.min_p);
    return draw(s, s->cand, n, s->p.temp);
}
