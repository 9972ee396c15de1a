/* Empirical frequencies of many seeded draws against the truncated, renormalised softmax
 * that a plain reference of llama.cpp's chain predicts: a chi-square bound, a per-token
 * bound of 5 standard errors, and no draw ever outside the kept set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sampler/sampler.h"
#include "testutil.h"

typedef struct {
    double logit;
    int id;
} ref_tok;

static int by_logit(const void *pa, const void *pb) {
    const ref_tok *a = pa, *b = pb;
    if (a->logit != b->logit) return a->logit > b->logit ? -1 : 1;
    return a->id - b->id;
}

/* Straightforward chain: full sort, cut, cut, cut, softmax at temperature. prob[n] out. */
static void ref_probs(const float *x, int n, const hr_sampler_params *p, const int *hist, int n_hist,
                      double *prob) {
    ref_tok *t = malloc((size_t)n * sizeof *t);
    for (int i = 0; i < n; i++) {
        double l = x[i];
        int seen = 0;
        for (int j = 0; j < n_hist; j++) seen |= hist[j] == i;
        if (seen && p->repeat_penalty != 1.0f)
            l = l <= 0 ? (double)(float)(x[i] * p->repeat_penalty) : (double)(float)(x[i] / p->repeat_penalty);
        t[i] = (ref_tok){l, i};
    }
    qsort(t, (size_t)n, sizeof *t, by_logit);
    int k = n;
    if (p->top_k > 0 && p->top_k < k) k = p->top_k;
    if (p->top_p < 1.0f) {
        double z = 0, c = 0;
        for (int i = 0; i < k; i++) z += exp(t[i].logit - t[0].logit);
        int keep = k;
        for (int i = 0; i < k; i++) {
            c += exp(t[i].logit - t[0].logit) / z;
            if (c >= p->top_p) {
                keep = i + 1;
                break;
            }
        }
        k = keep;
    }
    if (p->min_p > 0.0f) {
        int keep = 0;
        for (int i = 0; i < k; i++)
            if (exp(t[i].logit - t[0].logit) >= p->min_p) keep = i + 1;
        k = keep ? keep : 1;
    }
    double z = 0;
    memset(prob, 0, (size_t)n * sizeof *prob);
    for (int i = 0; i < k; i++) z += exp((t[i].logit - t[0].logit) / p->temp);
    for (int i = 0; i < k; i++) prob[t[i].id] = exp((t[i].logit - t[0].logit) / p->temp) / z;
    free(t);
}

/* Returns the number of kept tokens; checks counts against prob. */
static int compare(const char *name, const long *cnt, const double *prob, int n, long draws) {
    int kept = 0, outside = 0, bad_tok = -1;
    double chi = 0, lump_e = 0, lump_o = 0, worst = 0;
    int bins = 0;
    for (int i = 0; i < n; i++) {
        if (prob[i] == 0) {
            outside += cnt[i] != 0;
            continue;
        }
        kept++;
        double e = prob[i] * draws, f = (double)cnt[i] / draws;
        double tol = 5 * sqrt(prob[i] * (1 - prob[i]) / draws) + 2.0 / draws;
        if (fabs(f - prob[i]) > tol && fabs(f - prob[i]) / tol > worst) {
            worst = fabs(f - prob[i]) / tol;
            bad_tok = i;
        }
        if (e >= 5) {
            chi += (cnt[i] - e) * (cnt[i] - e) / e;
            bins++;
        } else {
            lump_e += e;
            lump_o += cnt[i];
        }
    }
    if (lump_e >= 5) {
        chi += (lump_o - lump_e) * (lump_o - lump_e) / lump_e;
        bins++;
    }
    double df = bins > 1 ? bins - 1 : 1, lim = df + 6 * sqrt(2 * df) + 10;
    CHECKF(outside == 0, "%s: %d tokens outside the kept set were drawn", name, outside);
    CHECKF(bad_tok < 0, "%s: token %d frequency %g vs %g", name, bad_tok, bad_tok < 0 ? 0 : (double)cnt[bad_tok] / draws,
           bad_tok < 0 ? 0 : prob[bad_tok]);
    CHECKF(chi <= lim, "%s: chi-square %g > %g (df %g)", name, chi, lim, df);
    return kept;
}

static int run_case(const char *name, const float *x, int n, hr_sampler_params p, const int *hist, int n_hist,
                    long draws) {
    hr_err e = {{0}};
    hr_sampler *s = hr_sampler_new(&p, n, &e);
    CHECKF(s != NULL, "%s: %s", name, e.msg);
    if (!s) return 0;
    for (int i = 0; i < n_hist; i++) hr_sampler_accept(s, hist[i]);
    long *cnt = calloc((size_t)n, sizeof *cnt);
    double *prob = malloc((size_t)n * sizeof *prob);
    for (long d = 0; d < draws; d++) {
        int t = hr_sampler_sample(s, x);
        if (t >= 0 && t < n) cnt[t]++;
        else CHECKF(0, "%s: token %d out of range", name, t);
    }
    ref_probs(x, n, &p, hist, n_hist, prob);
    int kept = compare(name, cnt, prob, n, draws);
    free(cnt);
    free(prob);
    hr_sampler_free(s);
    return kept;
}

static hr_sampler_params P(float temp, int k, float top_p, float min_p, uint64_t seed) {
    hr_sampler_params p = hr_sampler_defaults();
    p.temp = temp;
    p.top_k = k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.seed = seed;
    return p;
}

int main(void) {
    hr_rng r = {99};
    enum { NS = 64 };
    float x[NS];
    for (int i = 0; i < NS; i++) x[i] = hr_rng_normal(&r) * 1.5f;
    const long D = 100000;
    int k;
    k = run_case("full softmax t=1", x, NS, P(1.0f, 0, 1.0f, 0.0f, 1), NULL, 0, D);
    CHECK(k == NS);
    run_case("full softmax t=1.7", x, NS, P(1.7f, 0, 1.0f, 0.0f, 2), NULL, 0, D);
    k = run_case("top-k 10 t=0.7", x, NS, P(0.7f, 10, 1.0f, 0.0f, 3), NULL, 0, D);
    CHECK(k == 10);
    k = run_case("top-p 0.8 t=2", x, NS, P(2.0f, 0, 0.8f, 0.0f, 4), NULL, 0, D);
    CHECK(k > 1 && k < NS);
    k = run_case("min-p 0.1 t=3", x, NS, P(3.0f, 0, 1.0f, 0.1f, 5), NULL, 0, D);
    CHECK(k > 1 && k < NS);
    k = run_case("defaults", x, NS, P(0.8f, 40, 0.95f, 0.05f, 6), NULL, 0, D);
    CHECK(k > 1 && k < 40);
    k = run_case("k20 p0.9 min0.02 t4", x, NS, P(4.0f, 20, 0.9f, 0.02f, 7), NULL, 0, D);
    CHECK(k > 1 && k < 20);
    {
        hr_sampler_params p = P(1.2f, 30, 0.9f, 0.0f, 8);
        p.repeat_penalty = 1.3f;
        int hist[6] = {0, 1, 2, 3, 3, 40};
        run_case("penalty + top-k + top-p", x, NS, p, hist, 6, D);
    }

    /* large vocabularies: the partial-sort paths (top-p widening past 256, 2048, 16384) */
    enum { NL = 32000 };
    float *y = malloc(NL * sizeof *y);
    for (int i = 0; i < NL; i++) y[i] = hr_rng_normal(&r) * 2.0f;
    k = run_case("32k defaults", y, NL, P(0.8f, 40, 0.95f, 0.05f, 9), NULL, 0, 20000);
    CHECK(k > 1 && k <= 40);
    enum { NM = 4096 };
    for (int i = 0; i < NM; i++) y[i] = hr_rng_normal(&r) * 0.3f;
    k = run_case("4k top-p 0.5", y, NM, P(1.0f, 0, 0.5f, 0.0f, 14), NULL, 0, 20000);
    CHECK(k > 256 && k < NM);
    /* exclusion only (too few draws per token for frequencies): the widening past 2048, 16384 */
    for (int i = 0; i < NL; i++) y[i] = hr_rng_normal(&r) * 0.3f;
    /* a high temperature flattens the kept set so a wrongly kept tail would be drawn */
    k = run_case("32k top-p 0.3 t=20", y, NL, P(20.0f, 0, 0.3f, 0.0f, 10), NULL, 0, 600);
    CHECK(k > 2048);
    k = run_case("32k top-p 0.9 t=50", y, NL, P(50.0f, 0, 0.9f, 0.0f, 11), NULL, 0, 400);
    CHECK(k > 16384 && k < NL);
    k = run_case("32k min-p 0.5 t=50", y, NL, P(50.0f, 0, 1.0f, 0.5f, 12), NULL, 0, 1000);
    CHECK(k > 100 && k < NL);
    k = run_case("32k top-k 2000 top-p .5 min-p .6 t=30", y, NL, P(30.0f, 2000, 0.5f, 0.6f, 13), NULL, 0, 5000);
    CHECK(k > 10 && k < 1000);
    free(y);
    return TEST_END();
}
