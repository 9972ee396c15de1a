/* Hot-neuron placement against independent references: brute-force optima over every
 * subset of neurons (or groups) on tiny layers, the fractional-knapsack bound when layers
 * cost differently, and power-law statistics whose served share has a closed form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sparse/place.h"
#include "testutil.h"

#define NL 2
#define NF 6

static uint64_t solve(const uint32_t *counts, const uint64_t *nb, int32_t nl, int32_t nf, uint64_t budget, int32_t group,
                      hr_place_layer *lay, hr_gpuidx *g) {
    hr_err e = {{0}};
    hr_place_problem p = {nl, nf, counts, nb, budget, group};
    CHECK(hr_gpuidx_init(g, nl, nf, &e) == 0);
    int rc = hr_place_solve(&p, g, lay, &e);
    CHECKF(rc == 0, "%s", e.msg);
    uint64_t v = 0, bytes = 0;
    for (int32_t l = 0; l < nl; l++) {
        int32_t k = 0;
        uint64_t hv = 0;
        for (int32_t j = 0; j < nf; j++)
            if (g->hot[l * nf + j]) k++, hv += counts[l * nf + j];
        CHECKF(k == lay[l].n_hot, "layer %d: %d flags but n_hot %d", l, k, lay[l].n_hot);
        CHECKF(hv == lay[l].hot_count, "layer %d: flagged counts %llu, reported %llu", l, (unsigned long long)hv,
               (unsigned long long)lay[l].hot_count);
        CHECK(lay[l].bytes == (uint64_t)k * nb[l]);
        v += hv, bytes += lay[l].bytes;
    }
    CHECKF(bytes <= budget, "placed %llu bytes over a budget of %llu", (unsigned long long)bytes, (unsigned long long)budget);
    return v;
}

/* Best value over every subset of the NL*NF neurons that fits. */
static uint64_t brute(const uint32_t *c, const uint64_t *nb, uint64_t budget) {
    uint64_t best = 0;
    for (uint32_t m = 0; m < (1u << (NL * NF)); m++) {
        uint64_t cost = 0, v = 0;
        for (int i = 0; i < NL * NF; i++)
            if (m >> i & 1) cost += nb[i / NF], v += c[i];
        if (cost <= budget && v > best) best = v;
    }
    return best;
}

static int cmp_desc(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* Groups: each layer's counts sorted descending, cut into runs of g; best subset of runs. */
static uint64_t brute_groups(const uint32_t *c, uint64_t nb, uint64_t budget, int g) {
    uint64_t val[NL * NF], cost[NL * NF];
    int nu = 0;
    for (int l = 0; l < NL; l++) {
        uint32_t s[NF];
        memcpy(s, c + l * NF, sizeof s);
        qsort(s, NF, sizeof *s, cmp_desc);
        for (int lo = 0; lo < NF; lo += g) {
            val[nu] = 0;
            int hi = lo + g < NF ? lo + g : NF;
            for (int j = lo; j < hi; j++) val[nu] += s[j];
            cost[nu++] = (uint64_t)(hi - lo) * nb;
        }
    }
    uint64_t best = 0;
    for (uint32_t m = 0; m < (1u << nu); m++) {
        uint64_t cs = 0, v = 0;
        for (int i = 0; i < nu; i++)
            if (m >> i & 1) cs += cost[i], v += val[i];
        if (cs <= budget && v > best) best = v;
    }
    return best;
}

static void random_counts(hr_rng *r, uint32_t *c, int n) {
    /* Small ranges make ties common, which is where orderings go wrong. */
    uint32_t range = hr_rng_next(r) % 2 ? 8 : 1000;
    for (int i = 0; i < n; i++) c[i] = (uint32_t)(hr_rng_next(r) % range);
}

static void test_brute_force_equal_costs(void) {
    hr_rng r = {11};
    for (int trial = 0; trial < 300; trial++) {
        uint32_t c[NL * NF];
        random_counts(&r, c, NL * NF);
        uint64_t cost = 1 + hr_rng_next(&r) % 40, nb[NL] = {cost, cost};
        uint64_t budget = hr_rng_next(&r) % ((NL * NF + 1) * cost + 1);
        hr_place_layer lay[NL];
        hr_gpuidx g;
        uint64_t got = solve(c, nb, NL, NF, budget, 1, lay, &g), want = brute(c, nb, budget);
        CHECKF(got == want, "trial %d: greedy serves %llu, optimum %llu (budget %llu, cost %llu)", trial,
               (unsigned long long)got, (unsigned long long)want, (unsigned long long)budget, (unsigned long long)cost);
        hr_gpuidx_free(&g);
    }
}

static void test_brute_force_groups(void) {
    hr_rng r = {12};
    for (int trial = 0; trial < 200; trial++) {
        uint32_t c[NL * NF];
        random_counts(&r, c, NL * NF);
        const int grp = 2 + (int)(hr_rng_next(&r) % 3); /* 2, 3, 4 (4 leaves a short last group) */
        uint64_t cost = 1 + hr_rng_next(&r) % 9, nb[NL] = {cost, cost};
        uint64_t budget = hr_rng_next(&r) % ((NL * NF + 1) * cost + 1);
        hr_place_layer lay[NL];
        hr_gpuidx g;
        uint64_t got = solve(c, nb, NL, NF, budget, grp, lay, &g), want = brute_groups(c, cost, budget, grp);
        if (NF % grp == 0)
            CHECKF(got == want, "trial %d group %d: greedy %llu, optimum %llu", trial, grp, (unsigned long long)got,
                   (unsigned long long)want);
        else CHECKF(got <= want, "trial %d group %d: greedy %llu above the optimum %llu", trial, grp,
                    (unsigned long long)got, (unsigned long long)want);
        for (int l = 0; l < NL; l++) {
            int n = lay[l].n_hot;
            CHECKF(n == NF || n % grp == 0, "trial %d: layer %d has %d hot neurons, not whole groups of %d", trial, l, n, grp);
        }
        hr_gpuidx_free(&g);
    }
}

/* Layers of different neuron sizes: greedy by value per byte is within one neuron's
 * value of the optimum (the first unit that does not fit bounds the gap). */
static void test_unequal_costs_bound(void) {
    hr_rng r = {13};
    int exact = 0;
    for (int trial = 0; trial < 300; trial++) {
        uint32_t c[NL * NF];
        random_counts(&r, c, NL * NF);
        uint64_t nb[NL] = {1 + hr_rng_next(&r) % 20, 1 + hr_rng_next(&r) % 20};
        uint64_t budget = hr_rng_next(&r) % (NF * (nb[0] + nb[1]) + 1);
        uint32_t cmax = 0;
        for (int i = 0; i < NL * NF; i++) cmax = c[i] > cmax ? c[i] : cmax;
        hr_place_layer lay[NL];
        hr_gpuidx g;
        uint64_t got = solve(c, nb, NL, NF, budget, 1, lay, &g), want = brute(c, nb, budget);
        CHECKF(got <= want && got + cmax >= want, "trial %d: greedy %llu, optimum %llu, max count %u", trial,
               (unsigned long long)got, (unsigned long long)want, cmax);
        exact += got == want;
        hr_gpuidx_free(&g);
    }
    CHECKF(exact > 200, "greedy optimal in only %d of 300 unequal-cost trials", exact);
}

/* counts of rank k (0-based) proportional to 1/(k+1)^a, on shuffled neuron ids. With the
 * same law in every layer and a budget of K neurons per layer, each layer serves
 * sum_{k<K} c_k / sum_k c_k. */
static void test_power_law(void) {
    enum { L = 4, F = 1000, K = 100 };
    const double a = 1.0, C = 1e6;
    uint32_t *c = malloc(sizeof(uint32_t) * L * F);
    uint64_t nb[L] = {768, 768, 768, 768};
    hr_rng r = {14};
    double top = 0, all = 0;
    for (int k = 0; k < F; k++) {
        double v = floor(C / pow(k + 1, a) + 0.5);
        all += v;
        if (k < K) top += v;
    }
    for (int l = 0; l < L; l++) {
        int perm[F];
        for (int j = 0; j < F; j++) perm[j] = j;
        for (int j = F - 1; j > 0; j--) {
            int i = (int)(hr_rng_next(&r) % (uint64_t)(j + 1)), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int k = 0; k < F; k++) c[l * F + perm[k]] = (uint32_t)floor(C / pow(k + 1, a) + 0.5);
    }
    hr_place_layer lay[L];
    hr_gpuidx g;
    solve(c, nb, L, F, (uint64_t)L * K * 768 + 767, 1, lay, &g);
    for (int l = 0; l < L; l++) {
        CHECKF(lay[l].n_hot == K, "layer %d: %d hot, want %d", l, lay[l].n_hot, K);
        double share = (double)lay[l].hot_count / (double)lay[l].total_count;
        CHECKF(fabs(share - top / all) < 1e-12, "layer %d share %.6f, want %.6f", l, share, top / all);
        /* the flagged neurons are exactly ranks 0..K-1 */
        for (int j = 0; j < F; j++)
            if (g.hot[l * F + j]) CHECK(c[l * F + j] >= (uint32_t)floor(C / pow(K, a) + 0.5));
    }
    /* Harmonic numbers: H_100 / H_1000 for a = 1 (about 0.693), up to rounding of counts. */
    double h100 = 0, h1000 = 0;
    for (int k = 1; k <= F; k++) h1000 += 1.0 / k, h100 += k <= K ? 1.0 / k : 0;
    CHECKF(fabs(top / all - h100 / h1000) < 1e-4, "share %.6f vs H100/H1000 %.6f", top / all, h100 / h1000);
    hr_gpuidx_free(&g);
    /* Different exponents per layer: the hot set is the global top by count. */
    const double as[L] = {0.5, 1.0, 1.5, 2.0};
    uint32_t *sorted = malloc(sizeof(uint32_t) * L * F);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < F; k++) c[l * F + k] = (uint32_t)floor(C / pow(k + 1, as[l]) + 0.5);
    memcpy(sorted, c, sizeof(uint32_t) * L * F);
    qsort(sorted, L * F, sizeof *sorted, cmp_desc);
    uint64_t want = 0, got = 0;
    for (int i = 0; i < L * K; i++) want += sorted[i];
    solve(c, nb, L, F, (uint64_t)L * K * 768, 1, lay, &g);
    for (int l = 0; l < L; l++) got += lay[l].hot_count;
    CHECKF(got == want, "mixed exponents: served %llu, top-%d sum %llu", (unsigned long long)got, L * K,
           (unsigned long long)want);
    CHECK(lay[0].n_hot > lay[3].n_hot); /* the flattest law needs the most neurons */
    hr_gpuidx_free(&g);
    free(sorted);
    free(c);
}

static void test_edges(void) {
    uint32_t c[NL * NF] = {5, 4, 3, 2, 1, 0, 9, 9, 9, 0, 0, 0};
    uint64_t nb[NL] = {10, 10};
    hr_place_layer lay[NL];
    hr_gpuidx g;
    CHECK(solve(c, nb, NL, NF, 0, 1, lay, &g) == 0);
    CHECK(lay[0].n_hot == 0 && lay[1].n_hot == 0);
    hr_gpuidx_free(&g);
    /* Everything fits: every neuron goes, unfired ones too (they cost nothing extra). */
    solve(c, nb, NL, NF, 120, 1, lay, &g);
    CHECK(lay[0].n_hot == NF && lay[1].n_hot == NF);
    hr_gpuidx_free(&g);
    /* 35 bytes: three neurons; the three 9s of layer 1. */
    solve(c, nb, NL, NF, 35, 1, lay, &g);
    CHECK(lay[1].n_hot == 3 && lay[0].n_hot == 0 && g.hot[NF + 0] && g.hot[NF + 1] && g.hot[NF + 2]);
    hr_gpuidx_free(&g);

    hr_err e = {{0}};
    CHECK(hr_gpuidx_init(&g, NL, NF, &e) == 0);
    hr_place_problem p = {NL, NF, c, nb, 100, 0};
    CHECK(hr_place_solve(&p, &g, lay, &e) < 0 && strstr(e.msg, "group"));
    uint64_t zero[NL] = {10, 0};
    p.group = 1, p.neuron_bytes = zero;
    CHECK(hr_place_solve(&p, &g, lay, &e) < 0 && strstr(e.msg, "layer 1"));
    p.neuron_bytes = nb, p.n_ff = NF + 1;
    CHECK(hr_place_solve(&p, &g, lay, &e) < 0 && strstr(e.msg, "shape"));
    hr_gpuidx_free(&g);
}

int main(void) {
    test_brute_force_equal_costs();
    test_brute_force_groups();
    test_unequal_costs_bound();
    test_power_law();
    test_edges();
    return TEST_END();
}
